"""Investigations through a real Celery worker over Redis: run once, redelivered when the worker dies,
and reporting their progress while they run."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from celery_app.app import app
from rca.incidents.investigations import run_investigation, telemetry_for
from rca.incidents.models import Evidence, Hypothesis, Incident, Investigation
from rca.investigation.engine import investigate
from tests.faults.worker_app import purge_parked
from tests.integration.api.factories import user
from tests.integration.pipeline.worker import start_worker, stop, wait_for, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True), pytest.mark.slow]
DATA = Path(__file__).resolve().parents[4] / "shared" / "data"


@pytest.fixture(autouse=True)
def _clean_queue() -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    app.control.purge()  # messages other tests left for a worker that never came


def _import(dataset: str, case_id: str) -> Incident:
    call_command("import_case", dataset, case_id, "--data", str(DATA), verbosity=0)
    return Incident.objects.get(recorded_case__case_id=case_id)


def _status(investigation: Investigation) -> str:
    return Investigation.objects.values_list("status", flat=True).get(pk=investigation.pk)


def test_a_worker_investigates_an_imported_case_once(tmp_path: Path) -> None:
    incident = _import("rcd-sockshop", "rcd/carts-cpu/1")
    investigation = incident.investigations.get()
    worker = start_worker(tmp_path / "worker.log", "w1")
    try:
        wait_for(lambda: _status(investigation) == "succeeded", 90, "the investigation to finish")
    finally:
        stop(worker)
    investigation.refresh_from_db()
    # what the worker stored is exactly what the engine concludes for this case
    source, alert = telemetry_for(incident)
    expected = investigate(source, alert)
    assert investigation.exit == expected.exit
    assert investigation.root_cause_entity == (expected.root_cause.entity if expected.root_cause else "")
    assert investigation.tier == expected.outcome.tier.value
    assert [c["entity"] for c in investigation.candidates] == [c.entity for c in expected.candidates]
    assert investigation.proposals.count() == 1
    counts = (Hypothesis.objects.filter(investigation=investigation).count(), Evidence.objects.count())
    assert counts[0] > 0
    # a redelivered task finds the result stored and writes nothing more
    run_investigation(investigation.pk)
    assert (
        Hypothesis.objects.filter(investigation=investigation).count(),
        Evidence.objects.count(),
    ) == counts
    assert Investigation.objects.filter(incident=incident).count() == 1


def test_killed_worker_mid_investigation_is_redelivered_and_completes_once(tmp_path: Path) -> None:
    incident = _import("petshop", "petshop/high_traffic/train/issue_2")
    investigation = incident.investigations.get()
    gate = tmp_path / "gate"
    gate.mkdir()
    # The first worker holds the investigation between its work and its write, whatever the machine's
    # speed, and is killed there: nothing acknowledged, nothing stored.
    # The redelivered copy finds the dead worker's claim and looks again a stale period later: 5 s, not
    # the default 30 s, keeps the test short.
    stale = {"ROOTLINE_HEARTBEAT_STALE_S": "5"}
    env = worker_env(ROOTLINE_TEST_PAUSE_DIR=str(gate), **stale)
    first = start_worker(tmp_path / "first.log", "w1", env=env, app="tests.faults.worker_app")
    try:
        wait_for(lambda: (gate / "reached").exists(), 90, "the first worker to finish its loop")
        stop(first, signal.SIGKILL)
    finally:
        stop(first, signal.SIGKILL)
    assert _status(investigation) == "running"
    assert not Hypothesis.objects.filter(investigation=investigation).exists()
    second = start_worker(tmp_path / "second.log", "w2", env=worker_env(**stale))
    try:
        wait_for(lambda: _status(investigation) == "succeeded", 120, "the redelivered investigation")
    finally:
        stop(second)
    assert Investigation.objects.filter(incident=incident).count() == 1
    keys = list(Hypothesis.objects.filter(investigation=investigation).values_list("key", flat=True))
    assert keys
    assert len(keys) == len(set(keys))
    assert investigation.proposals.count() == 1


def test_the_investigate_task_writes_progress_a_page_can_poll(tmp_path: Path) -> None:
    """While the task runs, the investigation's row says the current turn, the last tool and how many
    hypotheses there are so far, and the API serves it to a polling page."""
    incident = _import("petshop", "petshop/high_traffic/train/issue_2")  # several turns
    investigation = incident.investigations.get()
    gate = tmp_path / "gate"
    gate.mkdir()
    env = worker_env(
        ROOTLINE_TEST_PAUSE_DIR=str(gate),  # pause once, after the loop's last turn, before storing
        ROOTLINE_TEST_PARK="rootline.project_graph,rootline.index_memory",  # not under test here
    )
    worker = start_worker(tmp_path / "worker.log", "w1", env=env, app="tests.faults.worker_app")
    page = APIClient()
    page.force_authenticate(user("viewer"))
    url = reverse("api:investigation-detail", args=[investigation.pk])
    try:
        wait_for(lambda: (gate / "reached").exists(), 90, "the worker to finish the loop")
        polled = page.get(url)
        assert polled.status_code == 200
        assert polled.json()["status"] == "running"
        progress = polled.json()["progress"]
        (gate / "go").touch()
        wait_for(lambda: _status(investigation) == "succeeded", 60, "the investigation to be stored")
    finally:
        stop(worker)
        purge_parked()
    investigation.refresh_from_db()
    assert set(progress) == {"turn", "last_tool", "hypotheses"}
    # what the page saw is the loop's last turn of this very run
    assert progress["turn"] == investigation.turns >= 2
    tools = set(
        Evidence.objects.filter(hypothesis__investigation=investigation).values_list("tool", flat=True)
    )
    assert progress["last_tool"] in tools
    assert progress["hypotheses"] == Hypothesis.objects.filter(investigation=investigation).count() >= 1
    # the stored result replaces the live progress with the run's summary
    assert investigation.progress["turn"] == investigation.turns
    assert "last_tool" not in investigation.progress
