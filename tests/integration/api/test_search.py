"""Past-incident search over incident memory (Qdrant local mode, the real embedding model)."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

from rca.core.grounding import Grounding
from rca.memory import index
from rca.memory.documents import document_for
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_search_finds_past_incidents_with_filters(viewer: APIClient) -> None:
    # Unique service names: the session's memory store is shared with other tests.
    tag = uuid.uuid4().hex[:8]
    db_incident = factories.incident(title=f"Checkout errors {tag}", symptom_entity=f"checkout-{tag}")
    db_inv = factories.investigation(db_incident, root=f"payments-db-{tag}", fault_kind="cpu_saturation")
    dns_incident = factories.incident(title=f"Cart timeouts {tag}", symptom_entity=f"cart-{tag}")
    dns_inv = factories.investigation(
        dns_incident, root=f"coredns-{tag}", fault_kind="dns_failure", grounding=Grounding.UNGROUNDED
    )
    index.upsert(document_for(db_incident, db_inv))
    index.upsert(document_for(dns_incident, dns_inv))
    gone = factories.incident(title=f"Deleted since {tag}", symptom_entity=f"checkout-{tag}")
    index.upsert(document_for(gone))
    gone.delete()

    response = viewer.get("/api/v1/search/", {"q": "database cpu saturation", "service": f"checkout-{tag}"})
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [r["incident"] for r in results] == [db_incident.pk]  # the deleted one is not shown
    assert results[0]["root_cause_entity"] == f"payments-db-{tag}"
    assert results[0]["status"] == "open"
    assert 0 < results[0]["score"] <= 1

    by_kind = viewer.get("/api/v1/search/", {"q": "timeouts", "fault_kind": "dns_failure"}).json()["results"]
    assert dns_incident.pk in [r["incident"] for r in by_kind]
    assert db_incident.pk not in [r["incident"] for r in by_kind]
    by_tier = viewer.get(
        "/api/v1/search/", {"q": "cart timeouts", "tier": "issue", "service": f"cart-{tag}"}
    ).json()
    assert [r["incident"] for r in by_tier["results"]] == [dns_incident.pk]
    later = viewer.get("/api/v1/search/", {"q": "errors", "since": "2030-01-01T00:00:00Z"}).json()["results"]
    assert later == []


@pytest.mark.parametrize(
    ("params", "field"),
    [({}, "q"), ({"q": ""}, "q"), ({"q": "x", "tier": "nuke"}, "tier"), ({"q": "x", "limit": 0}, "limit")],
)
def test_bad_search_is_400(viewer: APIClient, params: dict[str, object], field: str) -> None:
    response = viewer.get("/api/v1/search/", params)
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_memory_unavailable_is_503(viewer: APIClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(*args: object, **kwargs: object) -> None:
        raise index.MemoryUnavailable("incident memory can't be opened: held by another process")

    monkeypatch.setattr(index, "search", unavailable)
    response = viewer.get("/api/v1/search/", {"q": "anything"})
    assert response.status_code == 503
    assert "held by another process" in response.json()["detail"]


def test_gibberish_finds_no_similar_incident(viewer: APIClient) -> None:
    tag = uuid.uuid4().hex[:8]
    incident = factories.incident(title=f"Checkout errors {tag}", symptom_entity=f"checkout-{tag}")
    index.upsert(document_for(incident, factories.investigation(incident, root=f"payments-db-{tag}")))
    assert viewer.get("/api/v1/search/", {"q": "qwxz vbnmlk ptrs"}).json()["results"] == []
    found = viewer.get("/api/v1/search/", {"q": f"checkout errors {tag}"}).json()["results"]
    assert incident.pk in [r["incident"] for r in found]
