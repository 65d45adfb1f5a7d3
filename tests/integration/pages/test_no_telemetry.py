"""The incident page, the explorer and the API read the stored result document: with every telemetry
source made to raise, a finished investigation still renders in full (the explorer's timeline too).
An investigation stored before the document existed renders from its rows."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest
from django.test import Client

from rca.incidents import investigations
from rca.incidents.investigations import store_result
from rca.incidents.models import Investigation
from rca.incidents.results import LEGACY_VERSION, result_document
from rca.investigation.engine import investigate
from rca.telemetry import cases
from rca.telemetry.live.source import LiveSource
from rca.telemetry.recorded.source import RecordedSource
from tests.integration.api import factories
from tests.unit.investigation.scenario import build, propagate_latency

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

CHAIN = [("frontend", "checkout"), ("checkout", "payment"), ("frontend", "catalog")]
QUERIES = ("modalities", "time_range", "topology", "baseline_window", "metric_names", "metrics", "logs")


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise AssertionError("a page or the API opened telemetry")


@pytest.fixture
def finished() -> Investigation:
    """An investigation of a recorded case, run by the engine and stored as a worker stores it."""
    source, alert = build(CHAIN, propagate_latency(["payment", "checkout", "frontend"], 3.0))
    result = investigate(source, alert)
    assert result.root_cause is not None
    incident = factories.incident(
        symptom_entity=alert.entity,
        recorded_case={"dataset": "scenario", "case_id": "chain", "data_dir": "/nowhere"},
    )
    investigation = Investigation.objects.create(incident=incident, attempt_key=f"{incident.pk}:1")
    store_result(investigation, result, topology=source.topology())
    return investigation


@pytest.fixture
def stored_then_cut_off(finished: Investigation, monkeypatch: pytest.MonkeyPatch) -> Investigation:
    """`finished`, after which every way to telemetry raises: recorded cases, the recorded source's
    queries, the live source."""
    for module in (cases, investigations):
        monkeypatch.setattr(module, "load_case", _refuse)
    monkeypatch.setattr(investigations, "telemetry_for", _refuse)
    for name in (*QUERIES, "spans", "events"):
        monkeypatch.setattr(RecordedSource, name, _refuse)
    monkeypatch.setattr(LiveSource, "__init__", _refuse)
    return finished


def test_pages_and_api_render_a_finished_investigation_without_telemetry(
    viewer: Client, stored_then_cut_off: Investigation
) -> None:
    finished = stored_then_cut_off
    incident = finished.incident_id
    page = viewer.get(f"/incidents/{incident}/")
    assert page.status_code == 200
    assert page.context["sentence"].startswith("Confident: payment is the root cause")

    explorer = viewer.get(f"/incidents/{incident}/explorer/")
    assert explorer.status_code == 200
    assert not explorer.context["notes"]
    timeline = explorer.context["timeline"]
    assert timeline is not None
    drawn = {t["name"] for t in timeline["data"]}
    assert any(name.startswith("latency_p90") for name in drawn)  # the series the metrics tool examined
    assert explorer.context["timeline_entities"] == ["payment", "checkout", "frontend"]

    api = viewer.get(f"/api/v1/investigations/{finished.pk}/")
    assert api.status_code == 200
    assert api.json()["outcome_sentence"].startswith("Confident: payment is the root cause")


def test_the_document_holds_the_facts_the_explorer_draws(finished: Investigation) -> None:
    document = result_document(finished)
    assert document is not None
    assert document.version == 2
    assert {s.entity for s in document.facts.series} <= set(document.route())
    assert {"payment", "checkout", "frontend"} <= {s.entity for s in document.facts.series}
    assert document.facts.observations["payment"].deviates is True
    assert {e.name for e in document.facts.topology.entities} == {
        "frontend",
        "checkout",
        "payment",
        "catalog",
    }


def test_an_investigation_stored_before_the_document_still_renders(viewer: Client) -> None:
    legacy = factories.investigation()  # rows and JSON fields only, as stored before the document
    assert legacy.result_document is None
    document = result_document(legacy)
    assert document is not None
    assert document.version == LEGACY_VERSION
    assert document.root_cause is not None
    assert document.root_cause.entity == "payments-db"
    assert [h.id for h in document.hypotheses] == ["h1", "h2"]
    assert document.path[0].verification is not None
    assert document.chain.citation is not None
    assert document.chain.citation.ref == "abc123"
    page = viewer.get(f"/incidents/{legacy.incident_id}/")
    assert "Confident: payments-db is the root cause (cpu_saturation), grounded" in page.content.decode()
    explorer = viewer.get(f"/incidents/{legacy.incident_id}/explorer/")
    assert explorer.status_code == 200
    assert explorer.context["timeline"] is None  # no examined series were recorded then
    assert explorer.context["notes"]


def test_an_unfinished_investigation_has_no_document() -> None:
    running = factories.investigation(status=Investigation.Status.RUNNING)
    assert result_document(running) is None
