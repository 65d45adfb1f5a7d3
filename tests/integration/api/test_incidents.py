"""Incident list (filters, search, pagination) and detail; investigation detail and re-run."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from rca.core.grounding import Grounding
from rca.incidents.models import Alert, AuditEvent, Incident, Investigation
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def ids(response) -> list[int]:  # type: ignore[no-untyped-def]
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def test_list_is_newest_first_with_the_latest_tier(viewer: APIClient) -> None:
    old = factories.incident()
    new = factories.incident()
    factories.investigation(new, grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.9)
    body = viewer.get("/api/v1/incidents/").json()
    assert body["count"] == 2
    assert [r["id"] for r in body["results"]] == [new.pk, old.pk]
    first = body["results"][0]
    assert first["service"] == "checkout"
    assert first["latest_tier"] == "patch"
    assert first["latest_exit"] == "confident"
    assert body["results"][1]["latest_tier"] is None


def test_filters(viewer: APIClient) -> None:
    a = factories.incident(severity="critical", symptom_entity="checkout", title="Checkout latency high")
    b = factories.incident(
        severity="warning",
        symptom_entity="cart",
        source="generic",
        status=Incident.Status.RESOLVED,
        onset=factories.ONSET + timedelta(days=2),
    )
    assert ids(viewer.get("/api/v1/incidents/", {"status": "resolved"})) == [b.pk]
    assert ids(viewer.get("/api/v1/incidents/", {"severity": "CRITICAL"})) == [a.pk]
    assert ids(viewer.get("/api/v1/incidents/", {"service": "cart"})) == [b.pk]
    assert ids(viewer.get("/api/v1/incidents/", {"source": "alertmanager"})) == [a.pk]
    since = (factories.ONSET + timedelta(days=1)).isoformat()
    assert ids(viewer.get("/api/v1/incidents/", {"since": since})) == [b.pk]
    assert ids(viewer.get("/api/v1/incidents/", {"until": since})) == [a.pk]
    assert ids(viewer.get("/api/v1/incidents/", {"q": "LATENCY"})) == [a.pk]
    assert ids(viewer.get("/api/v1/incidents/", {"q": "nothing like it"})) == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "burning"}, "status"),
        ({"since": "last tuesday"}, "since"),
        ({"since": "2024-05-02T00:00:00Z", "until": "2024-05-01T00:00:00Z"}, "until"),
        ({"source": "email"}, "source"),
        ({"q": "x" * 201}, "q"),
        ({"service": "nul\x00"}, "service"),
    ],
)
def test_bad_filters_are_400_naming_the_parameter(
    viewer: APIClient, params: dict[str, str], field: str
) -> None:
    response = viewer.get("/api/v1/incidents/", params)
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]


def test_pagination(viewer: APIClient) -> None:
    for _ in range(3):
        factories.incident()
    page = viewer.get("/api/v1/incidents/", {"page_size": 2}).json()
    assert page["count"] == 3
    assert len(page["results"]) == 2
    assert page["next"]
    last = viewer.get("/api/v1/incidents/", {"page_size": 2, "page": 2}).json()
    assert len(last["results"]) == 1
    assert last["next"] is None
    assert viewer.get("/api/v1/incidents/", {"page": 99}).status_code == 404
    assert viewer.get("/api/v1/incidents/", {"page": "x"}).status_code == 404


def test_detail_has_alerts_and_the_latest_investigation(viewer: APIClient) -> None:
    incident = factories.incident()
    Alert.objects.create(
        incident=incident,
        source="alertmanager",
        fingerprint="fp",
        labels={"alertname": "HighErrorRate"},
        starts_at=factories.ONSET,
        raw={"version": "4"},
    )
    factories.investigation(incident, confident=False)
    latest = factories.investigation(incident)
    body = viewer.get(f"/api/v1/incidents/{incident.pk}/").json()
    assert [a["fingerprint"] for a in body["alerts"]] == ["fp"]
    summary = body["latest_investigation"]
    assert summary["id"] == latest.pk
    assert summary["outcome_sentence"].startswith("Confident: payments-db is the root cause (cpu_saturation)")
    assert summary["tier"] == "pull_request"
    assert summary["grounding"] == "grounded"
    assert next(i["id"] for i in body["investigations"]) == latest.pk
    assert len(body["investigations"]) == 2


@pytest.mark.parametrize("path", ["999999", "99999999999999999999999", "0"])
def test_unknown_incident_is_404(viewer: APIClient, path: str) -> None:
    assert viewer.get(f"/api/v1/incidents/{path}/").status_code == 404


def test_non_numeric_ids_are_404(viewer: APIClient) -> None:
    for url in ("/api/v1/incidents/abc/", "/api/v1/investigations/-1/", "/api/v1/actions/1e3/"):
        assert viewer.get(url).status_code == 404


# --- investigations -----------------------------------------------------------------------------------


def test_investigation_detail_has_everything_the_engine_found(viewer: APIClient) -> None:
    inv = factories.investigation(grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.95)
    proposal = factories.proposal(inv)
    body = viewer.get(f"/api/v1/investigations/{inv.pk}/").json()
    assert body["gate"]["clause"] == "validated"
    assert body["gate"]["auto_remediates"] is False
    assert body["exit"] == "confident"
    assert body["raw_confidence"] == 0.95
    assert body["capped_confidence"] == 0.84
    assert body["grounding"] == "partially_grounded"
    assert body["tier"] == "patch"
    assert [(h["key"], h["state"]) for h in body["hypotheses"]] == [
        ("h1", "validated"),
        ("h2", "invalidated"),
    ]
    assert body["hypotheses"][0]["evidence"][0]["source"] == "metrics"
    assert body["candidates"][0]["belief"] == "origin"
    assert body["propagation_path"][0]["cause"] == "payments-db"
    assert body["evidence_chain"]["grounding"] == "partially_grounded"
    assert body["progress"]["turn"] == 4
    assert body["proposals"][0]["id"] == proposal.pk
    assert body["proposals"][0]["allowed_tier"] == "patch"
    assert body["outcome_sentence"].startswith("Confident:")


def test_no_confident_root_cause_reads_as_such(viewer: APIClient) -> None:
    inv = factories.investigation(confident=False, grounding=Grounding.UNGROUNDED)
    body = viewer.get(f"/api/v1/investigations/{inv.pk}/").json()
    assert body["tier"] == "notify"
    assert body["outcome_sentence"].startswith("No confident root cause")


def test_a_queued_investigation_has_no_conclusion_yet(viewer: APIClient) -> None:
    inv = factories.investigation(status=Investigation.Status.QUEUED)
    body = viewer.get(f"/api/v1/investigations/{inv.pk}/").json()
    assert body["status"] == "queued"
    assert body["gate"] is None
    assert body["evidence_chain"] is None
    assert body["outcome_sentence"] is None
    assert body["hypotheses"] == []
    assert body["progress"] == {"turn": 2}


def test_unknown_investigation_is_404(viewer: APIClient, responder: APIClient) -> None:
    assert viewer.get("/api/v1/investigations/424242/").status_code == 404
    assert responder.post("/api/v1/investigations/424242/rerun/").status_code == 404


def test_rerun_by_a_responder_queues_a_new_investigation(responder: APIClient) -> None:
    inv = factories.investigation()
    response = responder.post(f"/api/v1/investigations/{inv.pk}/rerun/")
    assert response.status_code == 202, response.content
    new = Investigation.objects.get(pk=response.json()["investigation"])
    assert new.incident_id == inv.incident_id
    assert new.status == "queued"
    event = AuditEvent.objects.get(verb="investigation.rerun_requested")
    assert event.actor_label.startswith("responder")
    assert event.detail["new_investigation"] == new.pk
    # A second request while that one is queued is refused, not piled up.
    again = responder.post(f"/api/v1/investigations/{inv.pk}/rerun/")
    assert again.status_code == 409
    assert again.json()["code"] == "already_running"


def test_rerun_by_a_viewer_is_403_and_audited(viewer: APIClient) -> None:
    inv = factories.investigation()
    response = viewer.post(f"/api/v1/investigations/{inv.pk}/rerun/")
    assert response.status_code == 403
    assert "responder" in response.json()["detail"]
    assert Investigation.objects.count() == 1
    assert AuditEvent.objects.get(verb="investigation.rerun_refused").detail["code"] == "forbidden"


GUIDANCE = {
    "anchor": "budget_spent",
    "detail": "the turn or time budget ran out before a hypothesis was proven",
    "steps": [
        {
            "target": "payment",
            "operation": "examine",
            "verify": "a tool result that decides a cpu fault in payment",
            "stop_when": "5 more turns without a decision",
            "grounds": "seeded at anomaly score 0.80 and not examined before the budget ran out",
        }
    ],
    "dropped": [],
}


def test_rerun_applying_guidance_needs_guidance_and_carries_it(responder: APIClient) -> None:
    inv = factories.investigation()
    refused = responder.post(
        f"/api/v1/investigations/{inv.pk}/rerun/", {"apply_guidance": True}, format="json"
    )
    assert refused.status_code == 409
    assert refused.json()["code"] == "no_guidance"
    bad = responder.post(
        f"/api/v1/investigations/{inv.pk}/rerun/", {"apply_guidance": "maybe"}, format="json"
    )
    assert bad.status_code == 400
    assert "apply_guidance" in bad.json()["errors"]
    inv.guidance = GUIDANCE
    inv.save()
    shown = responder.get(f"/api/v1/investigations/{inv.pk}/").json()
    assert shown["guidance"]["anchor"] == "budget_spent"
    assert shown["applied_guidance"] is None
    response = responder.post(
        f"/api/v1/investigations/{inv.pk}/rerun/", {"apply_guidance": True}, format="json"
    )
    assert response.status_code == 202, response.content
    new = Investigation.objects.get(pk=response.json()["investigation"])
    assert new.applied_guidance["from_investigation"] == inv.pk
    assert new.applied_guidance["steps"] == GUIDANCE["steps"]
    assert AuditEvent.objects.get(verb="investigation.rerun_requested").detail["apply_guidance"] is True
