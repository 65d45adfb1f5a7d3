"""The incident and investigation a log line is about, carried into every record of the work.

A task or request sets them once (`bind`); a logging filter copies them onto each record, so the JSON
log lines of an investigation (its tools, the graph projection, the memory upsert) can be found by id
without every call site passing them along.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_incident: ContextVar[int | None] = ContextVar("rootline_incident", default=None)
_investigation: ContextVar[int | None] = ContextVar("rootline_investigation", default=None)


@contextmanager
def bind(incident: int | None = None, investigation: int | None = None) -> Iterator[None]:
    """Attach these ids to every log record made inside the block (nested blocks override)."""
    tokens = [_incident.set(incident), _investigation.set(investigation)]
    try:
        yield
    finally:
        _investigation.reset(tokens[1])
        _incident.reset(tokens[0])


class ContextFilter(logging.Filter):
    """Adds `incident_id` and `investigation_id` (None outside any bound work) to each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Annotate and keep the record."""
        record.incident_id = _incident.get()
        record.investigation_id = _investigation.get()
        return True
