"""The intake outbox's sweep, in-process (the broker-outage scenario on real processes is in
tests/integration/pipeline/test_outbox.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from celery_app.app import app
from rca.incidents.investigations import dispatch_pending
from rca.incidents.models import Incident

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
EARLIER = datetime(2025, 1, 1, tzinfo=UTC)


def test_the_sweep_sends_what_intake_could_not_and_only_that() -> None:
    app.control.purge()
    incident = Incident.objects.create(title="t", onset=EARLIER, fingerprint="fp", group_key="g")
    sent_before = incident.investigations.create(attempt_key="x:1", status="queued", dispatched_at=EARLIER)
    stuck = incident.investigations.create(attempt_key="x:2", status="queued")
    running = incident.investigations.create(attempt_key="x:3", status="running")
    try:
        assert dispatch_pending() == 1
        stuck.refresh_from_db()
        assert stuck.dispatched_at is not None
        assert dispatch_pending() == 0  # nothing left: a sweep never sends twice
        sent_before.refresh_from_db()
        running.refresh_from_db()
        assert sent_before.dispatched_at == EARLIER
        assert running.dispatched_at is None
    finally:
        app.control.purge()
