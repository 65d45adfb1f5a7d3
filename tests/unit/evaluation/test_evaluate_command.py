"""`manage.py evaluate`: its outputs and its argument errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

REPO = Path(__file__).resolve().parents[3]
DATA = REPO.parent / "shared" / "data"


def test_writes_scorecard_and_cases(tmp_path: Path) -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    call_command(
        "evaluate",
        "--data",
        str(DATA),
        "--dataset",
        "rcd-sockshop",
        "--limit",
        "2",
        "--out",
        str(tmp_path),
        verbosity=0,
    )
    card = json.loads((tmp_path / "scorecard.json").read_text())
    entry = card["datasets"]["rcd-sockshop/Sock Shop"]
    assert entry["cases"] == 2
    for field in (
        "ac1",
        "ac3",
        "ac5",
        "avg5",
        "fault_kind_accuracy",
        "confident_rate",
        "confident_precision",
        "median_seconds",
    ):
        assert field in entry
    with (tmp_path / "cases.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2
    assert {
        "dataset",
        "case_id",
        "truth",
        "top5",
        "rank",
        "exit",
        "validated",
        "tier",
        "capped_confidence",
        "seconds",
    } <= set(rows[0])


def test_variants_are_written_side_by_side(tmp_path: Path) -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    call_command(
        "evaluate",
        "--data",
        str(DATA),
        "--dataset",
        "rcd-sockshop",
        "--limit",
        "1",
        "--out",
        str(tmp_path),
        "--variant",
        "full",
        "--variant",
        "gate_shadow",
        verbosity=0,
    )
    assert (tmp_path / "full" / "scorecard.json").is_file()
    assert (tmp_path / "gate_shadow" / "scorecard.json").is_file()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--data", "/nonexistent", "--out", "x"], "--data"),
        (["--limit", "0", "--out", "x"], "--limit"),
        (["--dataset", "nosuch", "--out", "x"], "no case matches"),
    ],
)
def test_bad_arguments_fail_with_one_line(args: list[str], named: str, tmp_path: Path) -> None:
    if "--data" not in args and not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    full = args if "--data" in args else ["--data", str(DATA), *args]
    with pytest.raises(CommandError, match=named):
        call_command("evaluate", *full)
    proc = subprocess.run(
        [sys.executable, "manage.py", "evaluate", *full],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1


def test_folds_are_written_and_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    call_command(
        "evaluate",
        "--data",
        str(DATA),
        "--dataset",
        "rcd-sockshop",
        "--dataset",
        "petshop",
        "--limit",
        "6",
        "--out",
        str(tmp_path),
        "--folds",
        "dataset",
        "--jobs",
        "2",
        verbosity=0,
    )
    folded = json.loads((tmp_path / "folds-dataset.json").read_text())
    assert folded["pooled"]["cases"] == 6
    assert set(folded["fold_maps"]) == set(folded["datasets"])
    assert "calib. OOF" in capsys.readouterr().out


def test_jobs_must_be_positive() -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    with pytest.raises(CommandError, match="--jobs"):
        call_command("evaluate", "--data", str(DATA), "--out", "x", "--jobs", "0")
