"""`manage.py replay_case`: writes a replay, issues an intake token when none is given, and names the
argument at fault in one line (exit code 2)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from rca.incidents.models import IntakeToken
from rca.incidents.tokens import hash_token

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

DATA_DIR: Path | None = settings.ROOTLINE_DATA_DIR
needs_data = pytest.mark.skipif(DATA_DIR is None, reason="no public data folder (ROOTLINE_DATA_DIR)")
CASE = "rcd/carts-cpu/1"
REPO = Path(__file__).resolve().parents[3]


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("replay_case", *args, stdout=out)
    return out.getvalue()


@needs_data
def test_replay_with_a_given_token_prints_what_to_start(tmp_path: Path) -> None:
    out = tmp_path / "replay"
    printed = run(CASE, "--out", str(out), "--token", "rlt_given", "--alertmanager", "127.0.0.1:19093")

    manifest = json.loads((out / "replay.json").read_text())
    assert printed.splitlines()[0].startswith(f"replayed {CASE}: {manifest['series_total']} series")
    assert "rules on front-end: CPUAnomaly, MemoryAnomaly" in printed
    assert f"--storage.tsdb.path={out / 'prometheus' / 'data'}" in printed
    assert "--query.lookback-delta=5m" in printed
    assert "--cluster.listen-address=" in printed
    assert (out / "alertmanager" / "intake-token").read_text() == "rlt_given"
    assert "127.0.0.1:19093" in (out / "prometheus" / "prometheus.yml").read_text()
    assert not IntakeToken.objects.exists()


@needs_data
def test_without_a_token_one_is_issued_for_alertmanager(tmp_path: Path) -> None:
    out = tmp_path / "replay"
    printed = run(CASE, "--out", str(out), "--webhook", "http://rootline.test/api/v1/webhooks/alertmanager/")

    token = IntakeToken.objects.get()
    assert token.source == "alertmanager"
    assert token.name == f"replay {CASE}"
    assert f"issued intake token {token.prefix}..." in printed
    assert hash_token((out / "alertmanager" / "intake-token").read_text()) == token.token_hash
    assert (
        "http://rootline.test/api/v1/webhooks/alertmanager/"
        in (out / "alertmanager" / "alertmanager.yml").read_text()
    )


@needs_data
def test_a_case_replayed_again_gets_a_token_of_its_own(tmp_path: Path) -> None:
    run(CASE, "--out", str(tmp_path / "first"))
    run(CASE, "--out", str(tmp_path / "second"))
    tokens = IntakeToken.objects.order_by("id")
    assert [t.name for t in tokens] == [f"replay {CASE}", f"replay {CASE} (2)"]
    second = (tmp_path / "second" / "alertmanager" / "intake-token").read_text()
    assert hash_token(second) == tokens[1].token_hash


@needs_data
def test_a_database_without_tables_is_named_not_a_stack_trace(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'new.db'}"}
    command = [
        sys.executable,
        "manage.py",
        "replay_case",
        CASE,
        "--data",
        str(DATA_DIR),
        "--out",
        str(tmp_path / "o"),
    ]
    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1
    assert "cannot issue an intake token" in done.stderr
    assert "run `manage.py migrate`, or pass --token" in done.stderr
    assert "Traceback" not in done.stderr


@needs_data
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("no/such/case",), "CASE_ID: no case 'no/such/case' in the index"),
        ((CASE, "--data", "/nonexistent"), "--data: /nonexistent is not a folder"),
    ],
)
def test_argument_errors_name_the_argument(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=message) as caught:
        run(*args, "--out", str(tmp_path / "replay"))
    assert caught.value.returncode == 2
    assert not IntakeToken.objects.exists()


@needs_data
def test_an_output_folder_in_use_is_refused_before_any_token_is_issued(tmp_path: Path) -> None:
    (tmp_path / "left-over").write_text("x")
    with pytest.raises(CommandError, match=r"--out: .* is not empty") as caught:
        run(CASE, "--out", str(tmp_path))
    assert caught.value.returncode == 2
    assert not IntakeToken.objects.exists()
