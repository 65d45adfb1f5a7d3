"""A first run with real incidents: `import_examples` (what `dev.py run` calls) opens an incident for
the first dev case of every dataset and system in the index and sends its investigation to the
broker, once; without a data folder it imports nothing and says why."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from pytest_django.fixtures import Settings

from celery_app.app import app
from rca.incidents.models import Alert, Incident, Investigation
from rca.telemetry.cases import read_index

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
DATA = Path(__file__).resolve().parents[4] / "shared" / "data"


def _import_examples(*args: str) -> list[str]:
    out = io.StringIO()
    call_command("import_examples", *args, stdout=out)
    return out.getvalue().splitlines()


def _queued_messages() -> int:
    """Messages waiting in the investigation queue of the test Redis."""
    with app.connection_for_write() as conn:
        channel: Any = conn.default_channel  # kombu's Redis channel, which counts a queue's messages
        return int(channel.queue_declare("celery", passive=True).message_count)


def _rows() -> tuple[int, int, int]:
    return Incident.objects.count(), Alert.objects.count(), Investigation.objects.count()


def test_the_first_run_imports_a_dev_case_of_every_dataset_once(settings: Settings) -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    app.control.purge()
    pairs = {(ref.dataset, ref.system) for ref in read_index(DATA, split="dev")}
    try:
        lines = _import_examples("--data", str(DATA))  # as dev.py runs it

        incidents = list(Incident.objects.order_by("pk"))
        # one incident per dataset and system of the index (nezha has two systems)
        assert len(incidents) == len(pairs)
        imported = {(dict(i.recorded_case or {})["dataset"], i.title.split(":")[0]) for i in incidents}
        assert imported == pairs  # so every dataset of the index has at least one
        for incident in incidents:
            (investigation,) = incident.investigations.all()
            assert investigation.status == Investigation.Status.QUEUED
            assert investigation.dispatched_at is not None  # handed to the broker for a worker
            assert incident.status == Incident.Status.INVESTIGATING
        assert _queued_messages() == len(pairs)
        assert [line.split(":")[0] for line in lines[:-1]] == ["imported"] * len(pairs)
        assert lines[-1] == f"{len(pairs)} new incident(s) from {len(pairs)} dataset/system pair(s)"

        # Run again (here through the setting's folder): nothing is imported or queued twice.
        settings.ROOTLINE_DATA_DIR = DATA
        before = _rows()
        again = _import_examples()
        assert _rows() == before
        assert _queued_messages() == len(pairs)
        assert [line.split(":")[0] for line in again[:-1]] == ["already there"] * len(pairs)
        assert again[-1] == f"0 new incident(s) from {len(pairs)} dataset/system pair(s)"
    finally:
        app.control.purge()


def test_without_a_data_folder_the_first_run_imports_nothing_and_says_why(
    tmp_path: Path, settings: Settings
) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(CommandError, match=r"--data: .*no-such-folder is not a folder") as raised:
        _import_examples("--data", str(missing))
    assert raised.value.returncode == 2

    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match=r"has no cases_index\.csv"):
        _import_examples("--data", str(tmp_path / "empty"))

    settings.ROOTLINE_DATA_DIR = None  # no ../shared/data found and none configured
    with pytest.raises(CommandError, match="no data folder given and ROOTLINE_DATA_DIR is not set"):
        _import_examples()
    assert _rows() == (0, 0, 0)
