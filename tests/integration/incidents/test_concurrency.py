"""Concurrent deliveries race on real PostgreSQL transactions and still give one incident."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections

from rca.incidents.intake import IntakeResult, ingest_alertmanager
from rca.incidents.models import Alert, AuditEvent, Incident
from tests.integration.incidents.payloads import am_alert, am_payload, resolved

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

THREADS = 6


def run_together(payloads: list[dict[str, Any]], ingest: Callable[[Any], IntakeResult]) -> list[IntakeResult]:
    """Ingest each payload in its own thread (own connection), all released at once."""
    barrier = threading.Barrier(len(payloads))
    results: list[IntakeResult] = []
    errors: list[BaseException] = []

    def work(payload: dict[str, Any]) -> None:
        try:
            barrier.wait(timeout=10)
            results.append(ingest(payload))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    return results


def test_same_payload_from_many_threads_opens_one_incident() -> None:
    payload = am_payload(am_alert("aaa"), am_alert("bbb"))
    results = run_together([copy.deepcopy(payload) for _ in range(THREADS)], ingest_alertmanager)

    incident = Incident.objects.get()
    assert Alert.objects.count() == 2
    assert sum(r.alerts_stored for r in results) == 2
    assert sum(r.duplicates for r in results) == 2 * (THREADS - 1)
    assert sum(len(r.incidents_created) for r in results) == 1
    assert AuditEvent.objects.filter(verb="investigation.queued", target_id=str(incident.pk)).count() == 1


def test_different_alerts_of_one_group_at_once_join_one_incident() -> None:
    payloads = [am_payload(am_alert(f"fp{i}")) for i in range(THREADS)]
    run_together(payloads, ingest_alertmanager)

    incident = Incident.objects.get()
    assert incident.alerts.count() == THREADS


def test_concurrent_resolutions_resolve_the_incident() -> None:
    alerts = [am_alert(f"fp{i}") for i in range(THREADS)]
    ingest_alertmanager(am_payload(*alerts))

    run_together([am_payload(resolved(a)) for a in alerts], ingest_alertmanager)

    incident = Incident.objects.get()
    assert not incident.alerts.filter(status="firing").exists()
    # Each resolution checks "all resolved?" under the incident's lock, so the last one sees the rest.
    assert incident.status == Incident.Status.RESOLVED


def test_an_alert_inserted_with_others_that_a_concurrent_delivery_stored_first_is_a_duplicate() -> None:
    """Each delivery locks the group's incident with its own new alert, then inserts the shared one
    with the rest of the group in one statement; every delivery but the first finds it stored by then
    (its view of the stored alerts predates the lock): that insert is undone and the shared alert
    counted as a duplicate, the delivery's own alert kept."""
    ingest_alertmanager(am_payload(am_alert("fp-first")))  # the group's incident exists
    payloads = [am_payload(am_alert(f"fp{i}"), am_alert("zz-shared")) for i in range(THREADS)]
    results = run_together(payloads, ingest_alertmanager)

    incident = Incident.objects.get()
    assert sorted(incident.alerts.values_list("fingerprint", flat=True)) == sorted(
        ["fp-first", "zz-shared", *(f"fp{i}" for i in range(THREADS))]
    )
    assert sum(r.alerts_stored for r in results) == THREADS + 1
    assert sum(r.duplicates for r in results) == THREADS - 1
