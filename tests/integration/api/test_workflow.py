"""The workflow over the API: acknowledge / assign / resolve / reopen (roles, states, the answers'
status codes), and the incident list's assignee, confidence, tier, filters and ordering."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from rca.core.grounding import Grounding
from rca.incidents.models import AuditEvent, Incident
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def url(incident: Incident, step: str) -> str:
    return f"/api/v1/incidents/{incident.pk}/{step}/"


def test_a_responder_runs_the_whole_workflow(responder: APIClient) -> None:
    factories.user("approver", name="alan")
    incident = factories.incident()
    ack = responder.post(url(incident, "acknowledge"))
    assert ack.status_code == 200, ack.content
    assert ack.json()["acknowledged_at"]
    assert ack.json()["acknowledged_by"].startswith("responder")
    assigned = responder.post(url(incident, "assign"), {"assignee": "alan"}, format="json")
    assert assigned.status_code == 200
    assert assigned.json()["assignee"] == "alan"
    resolved = responder.post(url(incident, "resolve"), {"note": "rolled back"}, format="json")
    assert resolved.json()["status"] == "resolved"
    reopened = responder.post(url(incident, "reopen"), {}, format="json")
    assert reopened.json()["status"] == "open"
    assert reopened.json()["acknowledged_at"] is None
    unassigned = responder.post(url(incident, "assign"), {"assignee": None}, format="json")
    assert unassigned.json()["assignee"] is None
    assert AuditEvent.objects.filter(verb="incident.assigned").count() == 2


def test_a_viewer_gets_403_and_the_refusal_is_audited(viewer: APIClient) -> None:
    incident = factories.incident()
    response = viewer.post(url(incident, "resolve"), {}, format="json")
    assert response.status_code == 403
    assert response.json() == {
        "detail": "only a responder (or higher) may resolve an incident",
        "code": "forbidden",
    }
    assert AuditEvent.objects.filter(verb="incident.resolve_refused").count() == 1
    incident.refresh_from_db()
    assert incident.status == Incident.Status.OPEN


def test_wrong_state_is_409_and_bad_input_400(responder: APIClient) -> None:
    incident = factories.incident()
    assert responder.post(url(incident, "reopen"), {}, format="json").status_code == 409
    bad = responder.post(url(incident, "assign"), {"assignee": "nobody-such"}, format="json")
    assert bad.status_code == 400
    assert "not an active user with the responder role" in bad.json()["errors"]["assignee"]
    missing = responder.post(url(incident, "assign"), {}, format="json")
    assert missing.status_code == 400
    assert "assignee" in missing.json()["errors"]
    too_long = responder.post(url(incident, "resolve"), {"note": "x" * 2001}, format="json")
    assert too_long.status_code == 400
    assert responder.post("/api/v1/incidents/999999/acknowledge/").status_code == 404


def test_list_shows_assignee_confidence_and_tier_and_filters_by_them(
    client_for: Callable[[str | None], APIClient],
) -> None:
    viewer = client_for("viewer")
    alan = factories.user("approver", name="alan")
    owned = factories.incident(assignee=alan)
    factories.investigation(owned, grounding=Grounding.GROUNDED, raw_confidence=0.92)
    loose = factories.incident()
    factories.investigation(loose, grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.7)
    bare = factories.incident()

    rows = {r["id"]: r for r in viewer.get("/api/v1/incidents/").json()["results"]}
    assert rows[owned.pk]["assignee"] == "alan"
    assert rows[owned.pk]["latest_confidence"] == pytest.approx(0.92)
    assert rows[owned.pk]["latest_tier"] == "pull_request"
    assert rows[loose.pk]["latest_tier"] == "patch"
    assert rows[bare.pk]["latest_confidence"] is None
    assert rows[bare.pk]["assignee"] is None

    def ids(query: str) -> list[int]:
        response = viewer.get(f"/api/v1/incidents/?{query}")
        assert response.status_code == 200, response.content
        return [r["id"] for r in response.json()["results"]]

    assert ids("assignee=alan") == [owned.pk]
    assert ids("assigned=false") == [bare.pk, loose.pk]
    assert ids("tier=patch") == [loose.pk]
    assert ids("ordering=confidence") == [loose.pk, owned.pk, bare.pk]  # no confidence: last
    assert ids("ordering=-confidence") == [owned.pk, loose.pk, bare.pk]
    assert ids("ordering=-tier") == [owned.pk, loose.pk, bare.pk]
    assert ids("ordering=assignee")[0] == owned.pk
    assert ids("ordering=id") == [owned.pk, loose.pk, bare.pk]
    unknown = viewer.get("/api/v1/incidents/?ordering=secret_column")
    assert unknown.status_code == 400
    assert "ordering" in unknown.json()["errors"]
