"""Celery tasks. Each is thin: it calls a service and returns plain JSON-able data.

Tasks acknowledge late and are rejected (so redelivered) when their worker dies; the services they
call are idempotent, so a redelivery stores one result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from celery.signals import beat_init, task_received, worker_ready
from celery.worker import state as worker_state
from django.conf import settings
from django.db import InterfaceError, OperationalError

from celery_app.app import app
from graphstore.errors import GraphUnavailable
from rca.log_context import bind
from rca.memory.errors import MemoryUnavailable

if TYPE_CHECKING:
    from rca.heartbeats import ConsumerWatch

log = logging.getLogger(__name__)

RELIABLE: dict[str, Any] = {"acks_late": True, "reject_on_worker_lost": True}
DATABASE_ERRORS = (OperationalError, InterfaceError)


@app.task(name="rootline.ping", ignore_result=False)
def ping(payload: str = "pong") -> dict[str, str]:
    """A round trip through the broker; used by health checks and tests."""
    return {"reply": payload}


@app.task(
    name="rootline.investigate",
    bind=True,
    autoretry_for=DATABASE_ERRORS,  # the database restarting under us
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=8,
    **RELIABLE,
)
def investigate(self: Any, investigation_id: int) -> dict[str, Any]:
    """Run one investigation (seeded by recall of similar past incidents), then queue its projection
    into the graph and the incident's indexing in memory.

    A copy that finds the investigation running under another worker's live claim (a redelivery
    while that worker's heartbeat is not yet stale, or a re-send) looks again a stale period later:
    by then the run has finished, or its worker is known dead and this copy runs it."""
    from rca.incidents.investigations import run_investigation
    from rca.incidents.models import Investigation
    from rca.incidents.outbox import done_or_taken
    from rca.memory.index import recall_for

    try:
        investigation = Investigation.objects.select_related("incident").get(pk=investigation_id)
        incident = investigation.incident
        if investigation.status != Investigation.Status.SUCCEEDED:
            if done_or_taken(investigation):  # a copy while another worker runs it: one query
                if investigation.status == Investigation.Status.RUNNING:
                    raise self.retry(countdown=settings.ROOTLINE_RELIABILITY.heartbeat_stale_s)
                return {"investigation": investigation_id, "status": investigation.status, "duplicate": True}
            with bind(incident.pk, investigation_id):
                priors, note = recall_for(incident)
                investigation = run_investigation(investigation_id, priors=priors, recall_note=note)
    except Investigation.DoesNotExist:
        log.warning("investigation %s no longer exists; nothing to do", investigation_id)
        return {"investigation": investigation_id, "status": "missing"}
    # Queued too when a redelivery found the result already stored, if a step is still pending: a worker
    # that died between storing and queueing must not leave the graph and memory behind (both steps
    # are idempotent, and a duplicate of a finished investigation costs no more than this).
    if investigation.projected_at is None:
        project_graph.delay(investigation.pk)
    if investigation.indexed_at is None:
        index_memory.delay(investigation.incident_id)
    return {"investigation": investigation.pk, "status": investigation.status, "exit": investigation.exit}


@app.task(name="rootline.dispatch_pending", autoretry_for=DATABASE_ERRORS, max_retries=3)
def dispatch_pending() -> dict[str, int]:
    """The outbox's sweep (run by beat): send queued investigations the broker never got, and again
    those whose task was lost (rca.incidents.outbox)."""
    from rca.incidents.outbox import dispatch_pending as sweep

    return {"sent": sweep()}


_CONSUMER: list[ConsumerWatch] = []  # this worker process's watch, once it is ready


@worker_ready.connect
def _beat_as_worker(sender: Any = None, **_: Any) -> None:
    """A worker says it is alive, once per role its queues give it, for /healthz (rca.heartbeats),
    while its consumer takes what its queues hold."""
    from rca.heartbeats import QUEUE_ROLES, start, watch_consumer

    queues = tuple(sender.app.amqp.queues.consume_from) if sender is not None else ()
    roles = tuple(QUEUE_ROLES[q] for q in queues if q in QUEUE_ROLES)
    if not roles:
        return
    slots = int(sender.pool.num_processes)  # what it runs at once: 1 for a solo pool, whatever --concurrency
    _CONSUMER[:] = [watch_consumer(queues, slots, lambda: len(worker_state.reserved_requests))]
    log.info("watching %s with %d slot(s) for a deaf consumer", ", ".join(queues), slots)
    start(roles, watch=_CONSUMER[0])


@task_received.connect
def _taken(**_: Any) -> None:
    """The worker took a message from its queues: its consumer hears (rca.heartbeats.ConsumerWatch)."""
    for watch in _CONSUMER:
        watch.received()


@beat_init.connect
def _beat_as_scheduler(**_: Any) -> None:
    """The scheduler says it is alive, for /healthz (rca.heartbeats)."""
    from rca.heartbeats import start

    start(("scheduler",))


@worker_ready.connect
def _sweep_on_start(**_: Any) -> None:
    """A worker coming up (often: the broker just came back) sends what intake could not."""
    from rca.incidents.outbox import dispatch_pending as sweep

    try:
        sent = sweep()
    except (OperationalError, InterfaceError) as exc:  # the database is not up yet: beat will sweep
        log.warning("outbox sweep at worker start skipped: %s", exc)
        return
    if sent:
        log.info("outbox: sent %d queued investigation(s) at worker start", sent)


@app.task(
    name="rootline.project_graph",
    autoretry_for=(GraphUnavailable, *DATABASE_ERRORS),
    retry_backoff=5,
    retry_backoff_max=300,
    max_retries=30,  # about two hours of a graph server being down; `sync_graph` restores the rest
    **RELIABLE,
)
def project_graph(investigation_id: int) -> dict[str, Any]:
    """Project the investigation's incident into the graph (its latest finished investigation)."""
    from graphstore.sync import project_investigation
    from rca.incidents.models import Investigation

    investigation = Investigation.objects.filter(pk=investigation_id).first()
    if investigation is None:
        return {"investigation": investigation_id, "status": "missing"}
    with bind(investigation.incident_id, investigation_id):
        report = project_investigation(investigation)
    return {"investigation": investigation_id, "incident": report.incident, "statements": report.statements}


@app.task(
    name="rootline.index_memory",
    autoretry_for=(MemoryUnavailable, *DATABASE_ERRORS),
    retry_backoff=5,
    retry_backoff_max=300,
    max_retries=30,
    **RELIABLE,
)
def index_memory(incident_id: int) -> dict[str, Any]:
    """Store the incident in memory as its latest investigation concluded it (the memory queue)."""
    from rca.memory.index import index_incident

    with bind(incident_id):
        return {"incident": incident_id, "point": index_incident(incident_id)}


def _answer(work: Callable[[], Any]) -> dict[str, Any]:
    """The memory tasks' reply: the result, or why the store could not give one."""
    try:
        return {"result": work()}
    except MemoryUnavailable as exc:
        return {"unavailable": str(exc)}


@app.task(name="rootline.memory_search", ignore_result=False)
def memory_search(text: str, filters: dict[str, Any] | None, limit: int) -> dict[str, Any]:
    """Search the store this worker owns, for a process that can't open it (rca.memory.remote)."""
    from rca.memory.index import SearchFilters, memory

    query = SearchFilters.from_dict(filters) if filters else None
    return _answer(lambda: [hit.to_dict() for hit in memory().search(text, query, limit)])


@app.task(name="rootline.memory_recall", ignore_result=False)
def memory_recall(text: str, symptom: str | None, limit: int, exclude_incident: int | None) -> dict[str, Any]:
    """Recall priors from the store this worker owns (rca.memory.remote)."""
    from rca.memory.index import memory

    return _answer(lambda: memory().recall(text, symptom, limit, exclude_incident=exclude_incident))


@app.task(name="rootline.memory_status", ignore_result=False)
def memory_status() -> dict[str, Any]:
    """The store's one-line status, for the health check of a process that can't open it."""
    from rca.memory.index import memory

    return _answer(lambda: memory().status())


@app.task(
    name="rootline.execute_action",
    bind=True,
    autoretry_for=DATABASE_ERRORS,
    retry_backoff=True,
    max_retries=5,
    **RELIABLE,
)
def execute_action(self: Any, action_id: int) -> dict[str, Any]:
    """Carry out one approved action (rca.actions re-checks approval, tier and grounding itself);
    a 429 / 5xx is retried with backoff, and a redelivery makes no second artifact."""
    from rca.actions.executors import TransientActionError, execute

    try:
        return execute(action_id, final_attempt=self.request.retries >= self.max_retries)
    except TransientActionError as exc:
        raise self.retry(exc=exc, countdown=min(600, 30 * 2**self.request.retries)) from exc
