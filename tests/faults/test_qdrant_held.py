"""The local Qdrant store held by another process: recall degrades to none with a warning, the
investigation goes on and is stored with a note saying why it had no recall, and the incident is
indexed once the store is released (nothing lost)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from celery_app.app import app
from rca.incidents.models import Hypothesis, Incident, Investigation
from tests.conftest import REPO_ROOT
from tests.faults.worker_app import purge_parked
from tests.integration.pipeline.worker import start_worker, stop, wait_for, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True), pytest.mark.slow]
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
CASE = ("rcd-sockshop", "rcd/carts-cpu/1")
HOLD = (
    "import sys; from qdrant_client import QdrantClient; "
    "client = QdrantClient(path=sys.argv[1]); print('held', flush=True); sys.stdin.read()"
)


@pytest.fixture
def held_store(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A local Qdrant folder opened (and so locked) by another process, until that process ends."""
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    folder, out = tmp_path / "qdrant", tmp_path / "holder.log"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=out.open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: "held" in out.read_text(), 30, "the other process to open the store")
        yield folder, holder
    finally:
        holder.kill()
        holder.wait(timeout=10)


def _investigation(pk: int) -> Investigation:
    return Investigation.objects.get(pk=pk)


def _index_retried(log: Path) -> bool:
    return any(
        "rootline.index_memory" in line and "Retry in" in line for line in log.read_text().splitlines()
    )


def test_recall_degrades_when_another_process_holds_the_store(
    tmp_path: Path, held_store: tuple[Path, subprocess.Popen[bytes]]
) -> None:
    folder, holder = held_store
    app.control.purge()
    call_command("import_case", *CASE, "--data", str(DATA), verbosity=0)
    incident = Incident.objects.get(recorded_case__case_id=CASE[1])
    investigation = incident.investigations.get()
    env = worker_env(
        QDRANT_PATH=str(folder),
        ROOTLINE_MEMORY_VIA_WORKER="false",  # this worker opens the store itself: the held folder
        ROOTLINE_TEST_PARK="rootline.project_graph",  # the graph is not under test here
    )
    log = tmp_path / "worker.log"
    worker = start_worker(log, "qdrantheld", "celery,memory", env, app="tests.faults.worker_app")
    try:
        wait_for(lambda: _investigation(investigation.pk).status == "succeeded", 120, "the investigation")
        stored = _investigation(investigation.pk)
        # no recall, said so on the investigation and in the worker's log; the result is complete
        assert stored.recall["priors"] == {}
        assert stored.recall["note"].startswith("no recall:")
        assert "already accessed by another instance" in stored.recall["note"]
        assert f"recall for incident {incident.pk} skipped" in log.read_text()
        assert stored.exit == "confident"
        assert stored.root_cause_entity == "carts"
        assert Hypothesis.objects.filter(investigation=stored).exists()
        assert stored.indexed_at is None  # memory can't be written either: its task retries

        wait_for(lambda: _index_retried(log), 60, "the indexing to fail and be scheduled again")
        holder.kill()  # the other process lets go of the folder
        holder.wait(timeout=10)
        wait_for(lambda: _investigation(investigation.pk).indexed_at is not None, 60, "the retried indexing")
    finally:
        stop(worker)
        purge_parked()
    assert Investigation.objects.filter(incident=incident).count() == 1
    incident.refresh_from_db()
    assert incident.status == Incident.Status.OPEN
