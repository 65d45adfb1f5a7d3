"""`list_cases` and `import_case` on the real case index; argument errors are one line, exit 2."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.forms.models import model_to_dict

from rca.incidents.models import Alert, AuditEvent, Incident
from rca.telemetry.cases import read_index
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

DATA_DIR: Path | None = settings.ROOTLINE_DATA_DIR
needs_data = pytest.mark.skipif(DATA_DIR is None, reason="no public data folder (ROOTLINE_DATA_DIR)")
CASE = ("petshop", "petshop/high_traffic/train/issue_0")


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def manage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@needs_data
def test_list_cases_prints_every_dev_case_and_a_count() -> None:
    assert DATA_DIR is not None
    dev = read_index(DATA_DIR, split="dev")
    lines = run("list_cases", "--split", "dev").splitlines()

    assert lines[-1] == f"{len(dev)} cases"
    assert len(lines) == len(dev) + 1
    first = lines[0].split()
    assert first[:2] == [dev[0].dataset, dev[0].case_id]
    assert dev[0].telemetry in lines[0]
    assert {line.split()[0] for line in lines[:-1]} == {ref.dataset for ref in dev}


@needs_data
def test_list_cases_filters_by_dataset() -> None:
    lines = run("list_cases", "--dataset", "petshop", "--dataset", "nezha").splitlines()
    assert {line.split()[0] for line in lines[:-1]} == {"petshop", "nezha"}
    assert lines[-1] == f"{len(lines) - 1} cases"


@needs_data
def test_import_case_is_idempotent_and_references_telemetry_not_answers() -> None:
    assert DATA_DIR is not None
    first = run("import_case", *CASE)
    second = run("import_case", *CASE)

    incident = Incident.objects.get()
    assert first.strip() == f"imported {CASE[0]} {CASE[1]} as incident #{incident.pk}"
    assert second.strip() == f"{CASE[0]} {CASE[1]} was already imported: incident #{incident.pk}"
    assert incident.source == "recorded"
    assert incident.symptom_entity == "PetSite"
    assert incident.onset.isoformat() == "2023-04-13T01:49:08+00:00"  # the index's alert time
    assert incident.recorded_case == {"dataset": CASE[0], "case_id": CASE[1], "data_dir": str(DATA_DIR)}
    alert = Alert.objects.get()
    assert alert.labels["alertname"] == "PetSite latency"
    assert alert.raw["alert"]["entity"] == "PetSite"
    assert AuditEvent.objects.filter(verb="investigation.queued").count() == 1

    # Nothing stored may carry the case's answer.
    truth = pd.read_csv(DATA_DIR / "cases_index.csv", dtype=str, keep_default_na=False)
    row = truth[(truth.dataset == CASE[0]) & (truth.case_id == CASE[1])].iloc[0]
    stored = json.dumps([model_to_dict(incident), model_to_dict(alert)], default=str)
    assert row.root_cause_service not in stored
    assert row.fault_type not in stored


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["import_case", "nosuch", "x"], "DATASET: unknown dataset 'nosuch'"),
        (["import_case", CASE[0], "nosuch"], "CASE_ID: no case 'nosuch' in dataset petshop"),
        (["import_case", *CASE, "--data", "/nonexistent/data"], "--data: /nonexistent/data is not a folder"),
        (["list_cases", "--split", "train"], "--split: unknown split 'train'"),
        (["list_cases", "--dataset", "nosuch"], "--dataset: unknown dataset 'nosuch'"),
    ],
)
def test_bad_arguments_are_usage_errors(args: list[str], names: str) -> None:
    if DATA_DIR is None and "--data" not in args:
        pytest.skip("needs the public data folder (splits are read from its index)")
    with pytest.raises(CommandError) as caught:
        run(*args)
    assert caught.value.returncode == 2
    assert str(caught.value).startswith(names)
    assert Incident.objects.count() == 0


def test_data_folder_without_an_index_is_named(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as caught:
        run("list_cases", "--data", str(tmp_path))
    assert caught.value.returncode == 2
    assert str(caught.value) == f"--data: {tmp_path} has no cases_index.csv"


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["import_case", "nosuch", "x"], "DATASET"),
        (["import_case", "nosuch"], "CASE_ID"),  # argparse's own error, also one line
        (["list_cases", "--split", "bogus"], "--split"),
    ],
)
def test_command_line_errors_are_one_line_and_exit_2(args: list[str], names: str) -> None:
    if DATA_DIR is None and (args[1] == "--split" or (args[1] == "nosuch" and len(args) == 3)):
        names = "--data"  # without a data folder, that is what is missing first
    done = manage(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert names in lines[0]
    assert "Traceback" not in done.stderr
