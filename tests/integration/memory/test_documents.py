"""The incident document built from relational rows, and the text that gets embedded."""

from __future__ import annotations

import pytest

from rca.memory.documents import MAX_EVIDENCE, IncidentDocument, document_for
from tests.integration.memory.factories import ONSET, make_incident

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_document_from_a_confident_investigation() -> None:
    incident, investigation = make_incident(
        "checkout latency above SLO",
        symptom="checkout",
        root="payment",
        kind="cpu_saturation",
        path=["payment", "cart", "checkout"],
        tier="patch",
        evidence=["payment CPU at 98% of limit", "checkout p99 latency 4x baseline"],
        citation="raise payment worker count",
    )
    doc = document_for(incident, investigation)

    assert doc.incident_id == incident.pk
    assert doc.investigation_id == investigation.pk
    assert doc.title == "checkout latency above SLO"
    assert doc.symptom_entity == "checkout"
    assert doc.root_cause_entity == "payment"
    assert doc.fault_kind == "cpu_saturation"
    assert doc.tier == "patch"
    assert doc.exit == "confident"
    assert doc.confident
    assert doc.onset == ONSET
    assert doc.services == ("payment", "cart", "checkout")  # root cause first, then the path
    assert doc.evidence[0] == "Cited commit 9fceb02: raise payment worker count"
    assert "payment CPU at 98% of limit" in doc.evidence
    assert "checkout p99 latency 4x baseline" in doc.evidence  # from the evidence rows
    assert len(doc.evidence) <= MAX_EVIDENCE

    text = doc.text()
    assert "Root cause: cpu saturation in payment" in text
    assert "Symptom in checkout" in text
    assert "payment CPU at 98% of limit" in text


def test_document_without_a_confident_root_cause() -> None:
    incident, investigation = make_incident(
        "inventory errors", symptom="inventory", confident=False, evidence=["inventory 5xx at 3%"]
    )
    doc = document_for(incident, investigation)
    assert doc.root_cause_entity == ""
    assert doc.fault_kind == ""
    assert not doc.confident
    assert doc.services == ("inventory",)
    assert doc.evidence == ()  # only supporting evidence is key evidence
    assert "No confident root cause" in doc.text()


def test_document_before_any_investigation() -> None:
    incident, _ = make_incident("frontend 5xx", symptom="frontend", root="auth", kind="bad_deploy")
    doc = document_for(incident)
    assert doc.investigation_id is None
    assert doc.services == ("frontend",)
    assert doc.exit == ""


def test_payload_round_trip() -> None:
    incident, investigation = make_incident(
        "checkout slow",
        symptom="checkout",
        root="payment",
        kind="cpu_saturation",
        path=["payment", "checkout"],
    )
    doc = document_for(incident, investigation)
    payload = doc.payload()
    assert payload["onset_ts"] == ONSET.timestamp()
    assert payload["services"] == ["payment", "checkout"]
    assert IncidentDocument.from_payload(payload) == doc
