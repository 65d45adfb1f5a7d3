"""Graph-store errors."""

from __future__ import annotations


class GraphUnavailable(RuntimeError):
    """The graph server cannot be reached (down, restarting, or the connection was lost).

    Callers treat it as transient: the Celery task retries with backoff, and nothing is lost because
    the relational database stays the source of truth and the projection is replayable.
    """
