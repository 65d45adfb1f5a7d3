"""Investigations through a real Celery worker over Redis, redelivered when the worker dies."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from django.core.management import call_command

from celery_app.app import app
from rca.incidents.investigations import run_investigation, telemetry_for
from rca.incidents.models import Evidence, Hypothesis, Incident, Investigation
from rca.investigation.engine import investigate
from tests.integration.pipeline.worker import start_worker, stop, wait_for

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
    incident = _import("nezha", "nezha/2023-01-29/01")  # the largest recorded case: seconds of work
    investigation = incident.investigations.get()
    first = start_worker(tmp_path / "first.log", "w1")
    try:
        wait_for(lambda: _status(investigation) == "running", 90, "the first worker to start")
        stop(first, signal.SIGKILL)  # mid-investigation: nothing acknowledged, nothing stored
    finally:
        stop(first, signal.SIGKILL)
    assert _status(investigation) == "running"
    assert not Hypothesis.objects.filter(investigation=investigation).exists()
    second = start_worker(tmp_path / "second.log", "w2")
    try:
        wait_for(lambda: _status(investigation) == "succeeded", 120, "the redelivered investigation")
    finally:
        stop(second)
    assert Investigation.objects.filter(incident=incident).count() == 1
    keys = list(Hypothesis.objects.filter(investigation=investigation).values_list("key", flat=True))
    assert keys
    assert len(keys) == len(set(keys))
    assert investigation.proposals.count() == 1
