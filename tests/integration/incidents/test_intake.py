"""The intake service on real PostgreSQL: dedupe, grouping, resolution, re-opening, validation."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from rca.incidents import intake
from rca.incidents.intake import IntakeError, ingest_alertmanager, ingest_generic, label_fingerprint
from rca.incidents.models import Alert, AuditEvent, Incident
from tests.integration.incidents.payloads import am_alert, am_payload, resolved

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def queued(incident: Incident) -> int:
    return AuditEvent.objects.filter(
        verb="investigation.queued", target_type="incidents.incident", target_id=str(incident.pk)
    ).count()


def test_first_alert_opens_an_incident_and_queues_its_investigation() -> None:
    result = ingest_alertmanager(am_payload())

    incident = Incident.objects.get()
    assert result.incidents_created == [incident.pk]
    assert result.alerts_stored == 1
    assert result.duplicates == 0
    assert incident.status == Incident.Status.INVESTIGATING  # its investigation is queued
    assert incident.investigations.get().status == "queued"
    assert incident.source == "alertmanager"
    assert incident.title == "checkout 5xx above 5%"
    assert incident.severity == "critical"
    assert incident.symptom_entity == "checkout"
    assert incident.fingerprint == "1a30ba71cca2921f"
    assert incident.onset.isoformat() == "2024-05-01T10:00:00.123000+00:00"
    alert = incident.alerts.get()
    assert alert.status == Alert.Status.FIRING
    assert alert.ends_at is None  # zero time = still firing
    assert alert.generator_url.startswith("http://prometheus:9090/graph?g0.expr=")
    assert queued(incident) == 1


def test_resend_of_a_firing_alert_stores_nothing_new() -> None:
    payload = am_payload()
    ingest_alertmanager(payload)
    again = ingest_alertmanager(copy.deepcopy(payload))

    assert again.duplicates == 1
    assert again.alerts_stored == 0
    assert again.incidents_created == []
    assert again.incidents_updated == []
    assert again.incidents == [Incident.objects.get().pk]
    assert Alert.objects.count() == 1
    assert queued(Incident.objects.get()) == 1


def test_raw_payload_is_kept_as_received_narrowed_to_its_alert() -> None:
    first = {**am_alert("aaa"), "values": {"B": 0.07}, "silenceURL": "http://grafana/silence"}
    second = am_alert("bbb", pod="checkout-7d9f")
    payload = am_payload(first, second, orgId=1)
    ingest_alertmanager(copy.deepcopy(payload))

    envelope = {k: v for k, v in payload.items() if k != "alerts"}
    assert Alert.objects.get(fingerprint="aaa").raw == {**envelope, "alerts": [first]}
    assert Alert.objects.get(fingerprint="bbb").raw == {**envelope, "alerts": [second]}


def test_alerts_of_one_group_join_one_incident() -> None:
    ingest_alertmanager(am_payload(am_alert("aaa", severity="warning", starts_at="2024-05-01T10:05:00Z")))
    result = ingest_alertmanager(am_payload(am_alert("bbb", starts_at="2024-05-01T10:01:00Z")))

    incident = Incident.objects.get()
    assert result.incidents_updated == [incident.pk]
    assert result.incidents_created == []
    assert sorted(incident.alerts.values_list("fingerprint", flat=True)) == ["aaa", "bbb"]
    assert incident.onset.isoformat() == "2024-05-01T10:01:00+00:00"  # the earliest firing time
    assert incident.severity == "critical"  # escalated by the second alert
    assert queued(incident) == 1  # joining does not queue a second investigation


def test_different_groups_open_different_incidents() -> None:
    ingest_alertmanager(am_payload(am_alert("aaa"), group_key="{}:{alertname=A}"))
    ingest_alertmanager(am_payload(am_alert("bbb"), group_key="{}:{alertname=B}"))
    assert Incident.objects.count() == 2


def test_same_episode_routed_to_two_groups_is_stored_once() -> None:
    ingest_alertmanager(am_payload(am_alert("aaa"), group_key="route-1"))
    result = ingest_alertmanager(am_payload(am_alert("aaa"), group_key="route-2"))
    assert result.duplicates == 1
    assert Incident.objects.count() == 1
    assert Alert.objects.count() == 1


def test_incident_resolves_when_all_its_alerts_resolve() -> None:
    a, b = am_alert("aaa"), am_alert("bbb")
    ingest_alertmanager(am_payload(a, b))
    incident = Incident.objects.get()

    first = ingest_alertmanager(am_payload(resolved(a), b))
    incident.refresh_from_db()
    assert first.alerts_resolved == 1
    assert first.duplicates == 1
    assert incident.status == Incident.Status.INVESTIGATING  # still active: one alert fires on
    stored_a = Alert.objects.get(fingerprint="aaa")
    assert stored_a.status == Alert.Status.RESOLVED
    assert stored_a.ends_at is not None
    assert stored_a.ends_at.isoformat() == "2024-05-01T10:20:00+00:00"

    second = ingest_alertmanager(am_payload(resolved(a), resolved(b)))
    incident.refresh_from_db()
    assert second.alerts_resolved == 1
    assert second.duplicates == 1
    assert second.incidents_updated == [incident.pk]
    assert incident.status == Incident.Status.RESOLVED
    assert incident.resolved_at is not None
    assert AuditEvent.objects.filter(verb="incident.resolved", target_id=str(incident.pk)).count() == 1


def test_resent_resolution_and_stale_firing_change_nothing() -> None:
    a = am_alert("aaa")
    ingest_alertmanager(am_payload(a))
    ingest_alertmanager(am_payload(resolved(a)))

    assert ingest_alertmanager(am_payload(resolved(a))).duplicates == 1
    assert ingest_alertmanager(am_payload(a)).duplicates == 1  # the old firing notice, late
    incident = Incident.objects.get()
    assert incident.status == Incident.Status.RESOLVED
    assert queued(incident) == 1


def test_new_episode_soon_after_resolution_reopens_the_incident() -> None:
    a = am_alert("aaa")
    ingest_alertmanager(am_payload(a))
    ingest_alertmanager(am_payload(resolved(a)))

    result = ingest_alertmanager(am_payload(am_alert("aaa", starts_at="2024-05-01T10:30:00Z")))

    incident = Incident.objects.get()
    assert result.incidents_updated == [incident.pk]
    assert result.alerts_stored == 1
    assert incident.status == Incident.Status.INVESTIGATING  # re-opened and queued again
    assert incident.resolved_at is None
    assert incident.alerts.count() == 2
    assert queued(incident) == 2
    assert AuditEvent.objects.filter(verb="incident.reopened", target_id=str(incident.pk)).exists()


def test_one_delivery_resolving_the_last_alert_and_firing_a_new_one_reopens_once() -> None:
    # What a delivery knows about its group (the stored alerts, the locked incident) must not outlive a
    # resolution inside the same delivery.
    a = am_alert("aaa")
    ingest_alertmanager(am_payload(a))
    result = ingest_alertmanager(am_payload(resolved(a), am_alert("bbb")))
    incident = Incident.objects.get()
    assert incident.status == Incident.Status.INVESTIGATING  # resolved by aaa, re-opened by bbb
    assert incident.alerts.filter(status=Alert.Status.FIRING).count() == 1
    assert result.alerts_resolved == 1
    assert result.alerts_stored == 1
    assert AuditEvent.objects.filter(verb="incident.reopened", target_id=str(incident.pk)).count() == 1


def test_a_delivery_repeating_an_alert_stores_it_once() -> None:
    result = ingest_alertmanager(am_payload(am_alert("aaa"), am_alert("aaa"), am_alert("bbb")))
    assert result.alerts_stored == 2
    assert result.duplicates == 1
    assert Alert.objects.count() == 2


def test_new_episode_long_after_resolution_opens_a_new_incident() -> None:
    a = am_alert("aaa")
    ingest_alertmanager(am_payload(a))
    ingest_alertmanager(am_payload(resolved(a)))
    Incident.objects.update(resolved_at=timezone.now() - timedelta(hours=2))

    result = ingest_alertmanager(am_payload(am_alert("aaa", starts_at="2024-05-01T14:00:00Z")))

    assert len(result.incidents_created) == 1
    assert Incident.objects.filter(status=Incident.Status.INVESTIGATING).count() == 1
    assert Incident.objects.count() == 2


def test_resolution_of_an_unseen_alert_is_kept_but_not_investigated() -> None:
    result = ingest_alertmanager(am_payload(resolved(am_alert("zzz"))))

    incident = Incident.objects.get()
    assert result.incidents_created == [incident.pk]
    assert incident.status == Incident.Status.RESOLVED
    assert incident.alerts.get().status == Alert.Status.RESOLVED
    assert queued(incident) == 0


def test_labels_map_to_opentelemetry_identity() -> None:
    ingest_alertmanager(
        am_payload(
            am_alert(
                "aaa",
                job="http_checks",
                service="cart",
                namespace="shop",
                pod="cart-5f7c-x2",
                container="cart",
                instance="10.0.0.7:8080",
            )
        )
    )
    alert = Alert.objects.get()
    assert alert.entity == {
        "service.name": "cart",  # the explicit service label beats a scrape job
        "service.instance.id": "10.0.0.7:8080",
        "k8s.namespace.name": "shop",
        "k8s.pod.name": "cart-5f7c-x2",
        "k8s.container.name": "cart",
    }
    assert alert.incident.symptom_entity == "cart"


def test_missing_fingerprint_falls_back_to_a_stable_label_hash() -> None:
    alert = am_alert("")
    reordered = {**alert, "labels": dict(reversed(list(alert["labels"].items())))}
    ingest_alertmanager(am_payload(alert))
    assert ingest_alertmanager(am_payload(reordered)).duplicates == 1
    assert Alert.objects.get().fingerprint == label_fingerprint(alert["labels"])


@pytest.mark.parametrize(
    ("payload", "field", "words"),
    [
        ({k: v for k, v in am_payload().items() if k != "alerts"}, "alerts", "required"),
        (am_payload(alerts=[]), "alerts", "empty"),
        (am_payload(am_alert(starts_at="yesterday")), "alerts[0].startsAt", "format"),
        ({**am_payload(), "version": "3"}, "version", "unsupported webhook version '3'"),
        (am_payload(am_alert(status="burning")), "alerts[0].status", "not a valid choice"),
        (["not", "an", "object"], "payload", "dictionary"),
        (None, "payload", "No data provided"),
    ],
    ids=[
        "missing-alerts",
        "empty-alerts",
        "bad-startsAt",
        "wrong-version",
        "bad-status",
        "not-an-object",
        "null",
    ],
)
def test_invalid_payloads_name_the_field(payload: object, field: str, words: str) -> None:
    with pytest.raises(IntakeError) as caught:
        ingest_alertmanager(payload)
    assert field in caught.value.errors, caught.value.errors
    assert words in caught.value.errors[field]
    assert field in str(caught.value)
    assert Incident.objects.count() == 0
    assert Alert.objects.count() == 0


def test_a_bad_alert_rejects_the_whole_payload() -> None:
    with pytest.raises(IntakeError) as caught:
        ingest_alertmanager(am_payload(am_alert("ok"), am_alert("bad", starts_at="soon")))
    assert list(caught.value.errors) == ["alerts[1].startsAt"]
    assert Alert.objects.count() == 0


def generic(**overrides: object) -> dict[str, object]:
    return {
        "source": "pagerduty",
        "external_id": "PD-42",
        "status": "firing",
        "title": "Checkout latency p99 above 2s",
        "severity": "error",
        "starts_at": "2024-05-01T09:00:00Z",
        "labels": {"namespace": "shop"},
        "entity": {"service.name": "checkout", "service.version": "1.4.2"},
        **overrides,
    }


def test_generic_alert_opens_an_incident_and_is_idempotent() -> None:
    ingest_generic(generic())
    assert ingest_generic(generic()).duplicates == 1

    incident = Incident.objects.get()
    alert = incident.alerts.get()
    assert incident.source == "generic"
    assert incident.title == "Checkout latency p99 above 2s"
    assert incident.symptom_entity == "checkout"
    assert alert.fingerprint == "pagerduty:PD-42"  # ids of different senders cannot collide
    assert alert.entity["k8s.namespace.name"] == "shop"
    assert alert.entity["service.version"] == "1.4.2"
    assert alert.raw == generic()


def test_generic_alerts_group_by_group_key_and_resolve() -> None:
    ingest_generic(generic(group_key="checkout-latency"))
    ingest_generic(generic(external_id="PD-43", group_key="checkout-latency"))
    incident = Incident.objects.get()
    assert incident.alerts.count() == 2

    ingest_generic(generic(status="resolved", ends_at="2024-05-01T09:30:00Z", group_key="checkout-latency"))
    ingest_generic(generic(external_id="PD-43", status="resolved", group_key="checkout-latency"))
    incident.refresh_from_db()
    assert incident.status == Incident.Status.RESOLVED


def test_generic_validation_names_the_field() -> None:
    payload = generic()
    del payload["external_id"]
    with pytest.raises(IntakeError) as caught:
        ingest_generic({**payload, "source": "bad source!"})
    assert set(caught.value.errors) == {"external_id", "source"}


def test_a_delivery_that_loses_a_race_starts_over_and_finds_what_the_winner_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A concurrent delivery stores the same alert between this one's read of the stored alerts and
    its insert: the insert is refused, the whole delivery rolled back and ingested again, and the
    alert counted as a duplicate (nothing stored twice, no empty incident left)."""
    ingest_alertmanager(am_payload(am_alert("fp-raced")))
    reads = []
    real = intake._stored_alerts

    def stale_once(specs: list[Any]) -> Any:
        reads.append(len(specs))
        return {} if len(reads) == 1 else real(specs)  # the first read predates the other commit

    monkeypatch.setattr(intake, "_stored_alerts", stale_once)
    result = ingest_alertmanager(am_payload(am_alert("fp-raced"), am_alert("fp-new")))

    assert len(reads) == 2  # started over once
    assert (result.alerts_stored, result.duplicates) == (1, 1)
    assert sorted(Alert.objects.values_list("fingerprint", flat=True)) == ["fp-new", "fp-raced"]
    assert Incident.objects.count() == 1


def test_a_delivery_that_keeps_losing_gives_up_after_a_few_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    ingest_alertmanager(am_payload(am_alert("fp-raced")))
    monkeypatch.setattr(intake, "_stored_alerts", lambda specs: {})  # never sees the stored alert

    with pytest.raises(RuntimeError, match="gave up after 5 concurrent-write retries"):
        ingest_alertmanager(am_payload(am_alert("fp-raced")))
    assert Alert.objects.count() == 1
