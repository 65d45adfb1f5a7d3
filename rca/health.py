"""Health of Rootline's dependencies (database, broker, graph, vector store) and of its supervised
processes (workers, scheduler: from their heartbeats, see rca.heartbeats).

A check never hangs its caller: all run at once, each against a deadline (ROOTLINE_HEALTH_TIMEOUT_S),
and one still unanswered at the deadline reports "down" while it goes on in its own thread (a check
still running from an earlier round is waited on again, never started twice, so a hung dependency
holds one thread, not one per probe). A round's results are kept for ROOTLINE_HEALTH_CACHE_S, and
concurrent callers share one round, so a burst of probes costs one round.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.db import connection

from rca import heartbeats


@dataclass(frozen=True)
class Check:
    """The outcome of one dependency check."""

    name: str
    ok: bool
    detail: str


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return f"{connection.vendor} ok"
    finally:
        connection.close()  # this thread's own connection: none lingers in the checks' pool


def _broker() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "eager mode (tasks run in-process)"
    client = heartbeats.client(settings.ROOTLINE_RELIABILITY.health_timeout_s)
    try:
        client.ping()
    finally:
        client.close()
    return "redis ok"


def _graph() -> str:
    from graphstore.driver import database, get_driver

    # An auto-commit query: execute_query would retry a refused connection for up to 30 s.
    with get_driver().session(database=database()) as session:
        record = session.run("RETURN 1 AS ok").single()
    if record is None or record["ok"] != 1:
        raise RuntimeError("unexpected answer to RETURN 1")
    return f"bolt ok ({settings.ROOTLINE_GRAPH.uri})"


def _vectors() -> str:
    from rca.memory.index import status

    return status()


class ProcessMissing(RuntimeError):
    """No live heartbeat from a supervised process."""


def _process(role: str) -> str:
    client = heartbeats.client(settings.ROOTLINE_RELIABILITY.health_timeout_s)
    try:
        alive = heartbeats.live(client, role)
    finally:
        client.close()
    if not alive:
        stale = settings.ROOTLINE_RELIABILITY.heartbeat_stale_s
        raise ProcessMissing(f"no {role} has sent a heartbeat in the last {stale:g} s")
    now = time.time()
    return ", ".join(f"{p['name']} ({now - p['at']:.0f} s ago)" for p in alive)


CHECKS: dict[str, Callable[[], str]] = {
    "database": _database,
    "broker": _broker,
    "graph": _graph,
    "vector_store": _vectors,
}


def _all_checks() -> dict[str, Callable[[], str]]:
    """The dependency checks, then one per supervised process this installation expects."""
    return {**CHECKS, **{role: partial(_process, role) for role in heartbeats.expected_roles()}}


# One thread per check is enough: a check still running is never started again (see the docstring).
_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="health")
_running: dict[str, Future[str]] = {}
_round_lock = threading.Lock()
_last: tuple[float, list[Check]] | None = None


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]


def _round() -> list[Check]:
    timeout = settings.ROOTLINE_RELIABILITY.health_timeout_s
    checks = _all_checks()
    futures: dict[str, Future[str]] = {}
    for name, check in checks.items():
        previous = _running.get(name)
        if previous is None or previous.done():
            previous = _running[name] = _POOL.submit(check)
        futures[name] = previous
    wait(futures.values(), timeout=timeout)
    results = []
    for name, future in futures.items():
        if not future.done():
            results.append(Check(name, False, f"no answer within {timeout:g} s"))
            continue
        exc = future.exception()
        # Any failure is a "down" with its reason, never a 500.
        results.append(
            Check(name, True, future.result()) if exc is None else Check(name, False, _reason(exc))
        )
    return results


def run_checks() -> list[Check]:
    """Every check's outcome within ROOTLINE_HEALTH_TIMEOUT_S (or the last round's, when it is younger
    than ROOTLINE_HEALTH_CACHE_S); a failing or silent check reports why instead of raising."""
    global _last
    with _round_lock:  # concurrent probes wait for the one round in progress, then share it
        ttl = settings.ROOTLINE_RELIABILITY.health_cache_s
        if _last is not None and time.monotonic() - _last[0] < ttl:
            return _last[1]
        results = _round()
        _last = (time.monotonic(), results)
        return results
