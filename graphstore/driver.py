"""One shared neo4j driver per process, configured from settings."""

from __future__ import annotations

import threading

from neo4j import Driver, GraphDatabase

_lock = threading.Lock()
_driver: Driver | None = None


def get_driver() -> Driver:
    """The process-wide driver (thread-safe; the driver pools its own connections)."""
    global _driver
    with _lock:
        if _driver is None:
            from django.conf import settings

            graph = settings.ROOTLINE_GRAPH
            _driver = GraphDatabase.driver(
                graph.uri,
                auth=(graph.user, graph.password),
                connection_timeout=5.0,
                max_transaction_retry_time=10.0,
            )
        return _driver


def database() -> str:
    """The graph database name queries run against."""
    from django.conf import settings

    return str(settings.ROOTLINE_GRAPH.database)


def close_driver() -> None:
    """Close the shared driver (tests, shutdown)."""
    global _driver
    with _lock:
        if _driver is not None:
            _driver.close()
            _driver = None
