"""Health of Rootline's four dependencies: database, broker, graph, vector store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import connection


@dataclass(frozen=True)
class Check:
    """The outcome of one dependency check."""

    name: str
    ok: bool
    detail: str


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return f"{connection.vendor} ok"


def _broker() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "eager mode (tasks run in-process)"
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    finally:
        client.close()
    return "redis ok"


def _graph() -> str:
    from graphstore.driver import database, get_driver

    records, _, _ = get_driver().execute_query("RETURN 1 AS ok", database_=database())
    if not records or records[0]["ok"] != 1:
        raise RuntimeError("unexpected answer to RETURN 1")
    return f"bolt ok ({settings.ROOTLINE_GRAPH.uri})"


def _vectors() -> str:
    from rca.memory.index import status

    return status()


CHECKS: dict[str, Callable[[], str]] = {
    "database": _database,
    "broker": _broker,
    "graph": _graph,
    "vector_store": _vectors,
}


def run_checks() -> list[Check]:
    """Run every check; a failing one reports its reason instead of raising."""
    results = []
    for name, check in CHECKS.items():
        try:
            results.append(Check(name, True, check()))
        except Exception as exc:  # any failure is a "down" with its reason, never a 500
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            results.append(Check(name, False, f"{type(exc).__name__}: {reason}"[:300]))
    return results
