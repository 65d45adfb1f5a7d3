"""Handing investigations to the workers, and getting back the ones that were lost on the way.

The investigation row is the outbox. Intake commits it and then sends the task (`dispatch`); when the
broker is down nothing is sent and `dispatch_pending` (beat's sweep, and every worker at start) sends
it later. A task can still be lost after it was sent: the broker restarts without its data, or the
worker running it dies. So the same sweep also re-sends

* a queued investigation handed to the broker more than ROOTLINE_REDISPATCH_AFTER_S ago, and
* a running one whose worker has not shown a sign of life for ROOTLINE_HEARTBEAT_STALE_S
  (a worker beats on the row of what it runs, see `keep_alive`).

A re-send is idempotent: a worker first claims the row (`claim`); a succeeded investigation, or one
that another live worker has claimed, is not run again, so each one finishes exactly once.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from rca.incidents.models import Investigation
from rca.incidents.sending import BROKER_ERRORS, send
from rca.incidents.services import record_audit

log = logging.getLogger(__name__)

INVESTIGATE_TASK = "rootline.investigate"
BEATS_PER_STALE_PERIOD = 4  # as rca.heartbeats: one slow write is not taken for a death
ABANDONED = "abandoned"  # the error prefix of an investigation a re-run replaced while it was stuck


def dispatch(investigation_id: int) -> bool:
    """Send the investigate task of an investigation and record the hand-off; True when sent.

    Publishing does not retry here, so an intake request never hangs on a dead broker: the failure
    is logged and the sweep sends it once the broker is back.
    """
    try:
        send(INVESTIGATE_TASK, investigation_id)
    except BROKER_ERRORS as exc:
        log.warning(
            "investigation %s not sent (broker unavailable: %s); the outbox will send it",
            investigation_id,
            exc,
        )
        return False
    try:
        Investigation.objects.filter(pk=investigation_id).update(
            dispatched_at=timezone.now(), dispatches=F("dispatches") + 1
        )
    except DatabaseError as exc:  # sent but not marked (a lock, after intake committed): the sweep may
        # send it once more, which the claim makes harmless; the caller's request must not fail on it
        log.warning("investigation %s sent, hand-off not recorded: %s", investigation_id, exc)
    return True


# The claims of this process's runs in progress (a claim is made in `claim`, its run ends with its
# `keep_alive`). Set membership is atomic under the GIL, so a threaded pool shares it safely.
_RUNNING_HERE: set[str] = set()


def _stale(now: datetime) -> Q:
    """Investigations whose task was lost: sent long ago and still queued, or running in silence."""
    rel = settings.ROOTLINE_RELIABILITY
    sent_long_ago = Q(
        status=Investigation.Status.QUEUED,
        dispatched_at__lt=now - timedelta(seconds=rel.redispatch_after_s),
    )
    silent = now - timedelta(seconds=rel.heartbeat_stale_s)
    running_silent = Q(status=Investigation.Status.RUNNING) & (
        Q(heartbeat_at__lt=silent) | Q(heartbeat_at__isnull=True, started_at__lt=silent)
    )
    return sent_long_ago | running_silent


def stuck() -> QuerySet[Investigation]:
    """Queued or running investigations that the sweep would send again now."""
    return Investigation.objects.filter(_stale(timezone.now()))


def is_stuck(investigation: Investigation) -> bool:
    """Whether this queued or running investigation's task was lost (see `stuck`)."""
    return stuck().filter(pk=investigation.pk).exists()


def _due(investigation: Investigation, now: datetime) -> bool:
    """A stuck investigation is re-sent after the deadline, then after twice as long, and so on: in a
    long backlog (tasks only waiting their turn) each one is re-sent a few times, not every sweep."""
    if investigation.status != Investigation.Status.QUEUED or investigation.dispatched_at is None:
        return True  # a silent run: its worker is gone
    wait = settings.ROOTLINE_RELIABILITY.redispatch_after_s * 2 ** max(investigation.dispatches - 1, 0)
    return investigation.dispatched_at < now - timedelta(seconds=wait)


def dispatch_pending(limit: int = 500) -> int:
    """Send every queued investigation the broker never received, then re-send the stuck ones (oldest
    first, each one less often the more it was sent: `_due`); returns how many were sent."""
    never_sent = Investigation.objects.filter(status=Investigation.Status.QUEUED, dispatched_at__isnull=True)
    sent = 0
    for pk in never_sent.order_by("created_at", "pk").values_list("pk", flat=True)[:limit]:
        if not dispatch(pk):
            return sent  # the broker is still down: try again next sweep
        sent += 1
    now = timezone.now()
    due = [inv for inv in stuck().order_by("created_at", "pk") if _due(inv, now)]
    for investigation in due[: max(limit - sent, 0)]:
        was = investigation.status
        # Back to queued (a silent run's claim is dropped), only if nothing changed it meanwhile.
        reset = Investigation.objects.filter(
            pk=investigation.pk, status=was, claimed_by=investigation.claimed_by
        )
        if not reset.update(status=Investigation.Status.QUEUED, claimed_by=""):
            continue
        if not dispatch(investigation.pk):
            return sent
        record_audit(
            "investigation.redispatched",
            investigation,
            actor_label="outbox",
            detail={
                "was": was,
                "dispatched_at": investigation.dispatched_at.isoformat()
                if investigation.dispatched_at
                else None,
                "heartbeat_at": investigation.heartbeat_at.isoformat()
                if investigation.heartbeat_at
                else None,
                "claimed_by": investigation.claimed_by,
            },
        )
        log.warning("investigation %s was %s with its task lost: sent again", investigation.pk, was)
        sent += 1
    return sent


def worker_identity() -> str:
    """Who claims a run: host, process and a per-claim nonce (a redelivery in the same process differs)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _ended_here(claimed_by: str) -> bool:
    """Whether a claim is this process's own, left by a run that is no longer in progress (its result
    could not be written: the database went away under it). Only this process can know that its run
    ended; any other waits for the claim's heartbeat to go stale."""
    here = f"{socket.gethostname()}:{os.getpid()}:"
    return claimed_by.startswith(here) and claimed_by not in _RUNNING_HERE


def done_or_taken(investigation: Investigation) -> bool:
    """Whether a task for this investigation has nothing to do: it succeeded already, a live worker
    runs it, or a re-run replaced it."""
    if investigation.status == Investigation.Status.SUCCEEDED:
        return True
    if (
        investigation.status == Investigation.Status.RUNNING
        and not is_stuck(investigation)
        and not _ended_here(investigation.claimed_by)
    ):
        log.info(
            "investigation %s is being run by %s: not run twice", investigation.pk, investigation.claimed_by
        )
        return True
    return investigation.status == Investigation.Status.FAILED and investigation.error.startswith(ABANDONED)


def claim(investigation: Investigation) -> str | None:
    """Claim a locked investigation row for this run (status running, claimed, heartbeat now); returns
    the claim, or None when it must not run (`done_or_taken`). The caller holds the row lock
    (select_for_update) and saves nothing else."""
    if done_or_taken(investigation):
        return None
    now = timezone.now()
    mine = worker_identity()
    investigation.status = Investigation.Status.RUNNING
    investigation.started_at = now
    investigation.heartbeat_at = now
    investigation.claimed_by = mine
    investigation.progress = {}
    investigation.error = ""
    investigation.save(
        update_fields=["status", "started_at", "heartbeat_at", "claimed_by", "progress", "error"]
    )
    _RUNNING_HERE.add(mine)  # until its `keep_alive` ends
    return mine


def still_mine(investigation_id: int, mine: str) -> bool:
    """Whether this run's claim still holds (the sweep did not hand the investigation to another)."""
    return Investigation.objects.filter(pk=investigation_id, claimed_by=mine).exists()


@contextmanager
def keep_alive(investigation_id: int, mine: str) -> Iterator[None]:
    """Beat on the investigation's row while the body runs, so the sweep knows its worker lives."""
    stop = threading.Event()
    every = settings.ROOTLINE_RELIABILITY.heartbeat_stale_s / BEATS_PER_STALE_PERIOD

    def beat() -> None:
        try:
            while not stop.wait(every):
                try:
                    Investigation.objects.filter(pk=investigation_id, claimed_by=mine).update(
                        heartbeat_at=timezone.now()
                    )
                except DatabaseError as exc:  # a missed beat; the next one may get through
                    log.warning("heartbeat of investigation %s not written: %s", investigation_id, exc)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"investigation-{investigation_id}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        _RUNNING_HERE.discard(mine)
        stop.set()
        thread.join()


def abandon(investigation: Investigation, replaced_by: int) -> None:
    """Mark a stuck investigation failed for good, a re-run taking its place (no redelivery runs it)."""
    Investigation.objects.filter(pk=investigation.pk).update(
        status=Investigation.Status.FAILED,
        finished_at=timezone.now(),
        claimed_by="",
        error=f"{ABANDONED}: stuck {investigation.status} with its task lost; "
        f"re-run as investigation {replaced_by}",
    )
