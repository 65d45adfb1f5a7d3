"""The audit trail is append-only in the model, in bulk and in the admin; admin pages render."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse

from rca.incidents.intake import ingest_alertmanager
from rca.incidents.models import AppendOnlyError, AuditEvent, Incident
from rca.incidents.services import record_audit
from tests.integration.incidents.payloads import am_payload

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def event() -> AuditEvent:
    ingest_alertmanager(am_payload())
    return AuditEvent.objects.get(verb="investigation.queued")


def test_event_records_who_did_what_to_what(event: AuditEvent) -> None:
    incident = Incident.objects.get()
    assert (event.actor, event.actor_label) == (None, "intake")
    assert (event.target_type, event.target_id) == ("incidents.incident", str(incident.pk))
    assert event.at is not None


def test_event_cannot_be_updated(event: AuditEvent) -> None:
    event.verb = "nothing.happened"
    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.filter(pk=event.pk).update(verb="nothing.happened")
    event.refresh_from_db()
    assert event.verb == "investigation.queued"


def test_a_new_instance_cannot_overwrite_an_existing_row(event: AuditEvent) -> None:
    forged = AuditEvent(pk=event.pk, actor_label="mallory", verb="x", target_type="y", target_id="z")
    with pytest.raises(IntegrityError), transaction.atomic():
        forged.save()
    event.refresh_from_db()
    assert event.actor_label == "intake"


def test_event_cannot_be_deleted(event: AuditEvent) -> None:
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.all().delete()
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_actor_label_defaults_to_the_user_name(django_user_model) -> None:  # type: ignore[no-untyped-def]
    user = django_user_model.objects.create_user("alice")
    incident = Incident.objects.create(
        title="t", onset="2024-05-01T10:00:00Z", fingerprint="f", group_key="g", source="generic"
    )
    made = record_audit("proposal.approved", incident, actor=user, detail={"tier": "issue"})
    assert (made.actor, made.actor_label, made.detail) == (user, "alice", {"tier": "issue"})


def test_admin_shows_events_read_only(admin_client: Client, event: AuditEvent) -> None:
    change = reverse("admin:incidents_auditevent_change", args=[event.pk])
    assert admin_client.get(change).status_code == 200  # viewable
    assert admin_client.post(change, {"verb": "x"}).status_code == 403
    delete = reverse("admin:incidents_auditevent_delete", args=[event.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert admin_client.get(reverse("admin:incidents_auditevent_add")).status_code == 403
    event.refresh_from_db()
    assert event.verb == "investigation.queued"


@pytest.mark.parametrize(
    "model", ["incident", "alert", "investigation", "hypothesis", "evidence", "actionproposal", "auditevent"]
)
def test_admin_pages_render(admin_client: Client, event: AuditEvent, model: str) -> None:
    assert admin_client.get(reverse(f"admin:incidents_{model}_changelist")).status_code == 200


def test_admin_incident_page_renders(admin_client: Client, event: AuditEvent) -> None:
    incident = Incident.objects.get()
    page = admin_client.get(reverse("admin:incidents_incident_change", args=[incident.pk]))
    assert page.status_code == 200
    assert b"1a30ba71cca2921f" in page.content  # the alert inline
