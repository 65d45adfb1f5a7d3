"""The outbox's sweep, in-process: it sends what intake could not, and again what was lost after it
was sent (the broker-outage scenario on real processes is in tests/integration/pipeline/test_outbox.py,
crashes and restarts in tests/faults/)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from celery_app.app import app
from rca.incidents.models import AuditEvent, Incident, Investigation
from rca.incidents.outbox import claim, dispatch_pending, keep_alive, stuck

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
EARLIER = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture
def incident() -> Incident:
    app.control.purge()
    yield Incident.objects.create(title="t", onset=EARLIER, fingerprint="fp", group_key="g")
    app.control.purge()


def test_the_sweep_sends_the_never_sent_and_the_lost_once_each(incident: Incident) -> None:
    now = timezone.now()
    never_sent = incident.investigations.create(attempt_key="x:1", status="queued")
    sent_just_now = incident.investigations.create(attempt_key="x:2", status="queued", dispatched_at=now)
    sent_long_ago = incident.investigations.create(attempt_key="x:3", status="queued", dispatched_at=EARLIER)
    running_alive = incident.investigations.create(
        attempt_key="x:4", status="running", started_at=EARLIER, heartbeat_at=now, claimed_by="w:1"
    )
    running_silent = incident.investigations.create(
        attempt_key="x:5", status="running", started_at=EARLIER, heartbeat_at=EARLIER, claimed_by="w:2"
    )
    assert set(stuck().values_list("pk", flat=True)) == {sent_long_ago.pk, running_silent.pk}

    assert dispatch_pending() == 3
    for row in (never_sent, sent_just_now, sent_long_ago, running_alive, running_silent):
        row.refresh_from_db()
    assert never_sent.dispatches == 1
    assert never_sent.dispatched_at is not None
    assert sent_just_now.dispatches == 0
    assert sent_just_now.dispatched_at == now
    assert sent_long_ago.dispatches == 1
    assert sent_long_ago.dispatched_at > now
    assert running_alive.status == "running"
    assert running_alive.claimed_by == "w:1"
    # The silent run is queued again, its claim dropped, and the re-send is audited.
    assert running_silent.status == "queued"
    assert running_silent.claimed_by == ""
    assert running_silent.dispatches == 1
    audited = AuditEvent.objects.filter(verb="investigation.redispatched").values_list("target_id", flat=True)
    assert sorted(audited) == sorted([str(sent_long_ago.pk), str(running_silent.pk)])
    assert dispatch_pending() == 0  # nothing left: a sweep never sends twice


def test_a_claim_refuses_a_duplicate_while_its_worker_lives(incident: Incident) -> None:
    investigation = incident.investigations.create(attempt_key="x:1", status="queued")
    first = claim(investigation)
    assert first is not None
    investigation.refresh_from_db()
    assert investigation.status == "running"
    assert investigation.claimed_by == first
    assert claim(investigation) is None  # a redelivered duplicate while the first run beats
    Investigation.objects.filter(pk=investigation.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    investigation.refresh_from_db()
    second = claim(investigation)  # the first worker went silent: the run is taken over
    assert second is not None
    assert second != first
    Investigation.objects.filter(pk=investigation.pk).update(status="succeeded")
    investigation.refresh_from_db()
    assert claim(investigation) is None


def test_a_claim_this_process_left_behind_is_taken_at_once(incident: Incident) -> None:
    """A run whose result could not be stored (the database went away) leaves its claim with a fresh
    heartbeat; the retry in the same process knows that run ended and need not wait for it to go stale.
    Another process's claim still holds until then."""
    investigation = incident.investigations.create(attempt_key="x:1", status="queued")
    first = claim(investigation)
    assert first is not None
    with keep_alive(investigation.pk, first):
        investigation.refresh_from_db()
        assert claim(investigation) is None  # in progress here
    investigation.refresh_from_db()
    assert investigation.claimed_by == first  # never released
    assert investigation.status == "running"
    retried = claim(investigation)
    assert retried is not None
    assert retried != first
    elsewhere = f"{retried.split(':')[0]}:{os.getpid() + 1}:0123abcd"  # another worker process
    now = timezone.now()
    Investigation.objects.filter(pk=investigation.pk).update(claimed_by=elsewhere, heartbeat_at=now)
    investigation.refresh_from_db()
    assert claim(investigation) is None


def test_a_backlogged_investigation_is_re_sent_less_often_each_time(incident: Incident) -> None:
    """Re-sent after the deadline (600 s by default), then after twice as long: a long queue of tasks
    that are only waiting their turn does not fill the broker with copies."""
    twenty_minutes_ago = timezone.now() - timedelta(minutes=20)
    once = incident.investigations.create(
        attempt_key="x:1", status="queued", dispatched_at=twenty_minutes_ago, dispatches=1
    )
    thrice = incident.investigations.create(
        attempt_key="x:2", status="queued", dispatched_at=twenty_minutes_ago, dispatches=3
    )
    assert dispatch_pending() == 1  # 20 min > 600 s x 2^0; not > 600 s x 2^2
    once.refresh_from_db()
    thrice.refresh_from_db()
    assert (once.dispatches, thrice.dispatches) == (2, 3)
