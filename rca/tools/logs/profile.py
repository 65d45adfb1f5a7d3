"""The logs profile of an investigation: every entity's log lines read once (with the span starts that
anchor their statement pairs) and analysed (cached)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import pandas as pd

from rca.telemetry.model import TimeWindow
from rca.tools.base import ToolContext
from rca.tools.counts import fetch_compared
from rca.tools.logs.analysis import ANCHOR_COLUMNS, LogAnalysis, LogProfile, profile_lines, span_anchors
from rca.tools.spans import span_frame

CACHE_KEY = "logs.analysis"
MAX_LINES = 200_000  # per entity and query: far above a few minutes of any service's logs
_COLUMNS = ["time", "entity", "severity", "body", "trace_id", "unit"]


@runtime_checkable
class LogTable(Protocol):
    """A source that hands over the fields of the log records `logs` would list, entity after entity,
    as one frame (a recording read from files holds them so): no object per line."""

    def log_table(self, entities: Sequence[str], window: TimeWindow, limit: int = 10_000) -> pd.DataFrame:
        """Columns time, entity, severity (its value), body, trace_id, span_id (None where missing)."""
        ...


def _fetch(ctx: ToolContext, entities: Sequence[str], window: TimeWindow) -> pd.DataFrame:
    # The unit of a line: its span (one request's work in one service), else its trace.
    if isinstance(ctx.source, LogTable):
        table = ctx.source.log_table(entities, window, limit=MAX_LINES)
        if table.empty:
            return pd.DataFrame([], columns=_COLUMNS)
        unit = [s or t for s, t in zip(table["span_id"].tolist(), table["trace_id"].tolist(), strict=True)]
        return table.drop(columns="span_id").assign(unit=unit)
    rows = [
        (r.time, r.entity, r.severity.value, r.body, r.trace_id, r.span_id or r.trace_id)
        for e in entities
        for r in ctx.source.logs(e, window, limit=MAX_LINES)
    ]
    return pd.DataFrame(rows, columns=_COLUMNS)


def analyse(ctx: ToolContext) -> LogAnalysis:
    """Profile every entity's logs once per investigation (cached in `ctx.cache`)."""
    cached = ctx.cache.get(CACHE_KEY)
    if isinstance(cached, LogAnalysis):
        return cached
    entities = sorted({*ctx.graph.names(), ctx.alert.entity})
    frame, cmp = fetch_compared(ctx, lambda w: _fetch(ctx, entities, w), "time")
    anchors = pd.DataFrame(columns=ANCHOR_COLUMNS)
    if cmp.reference is not None:
        anchors = span_anchors(span_frame(ctx)[0])
    result = profile_lines(frame, cmp, anchors, entities, ctx.graph, ctx.digraph, ctx.source.conventions)
    ctx.cache[CACHE_KEY] = result
    return result


def log_profile(ctx: ToolContext, entity: str) -> LogProfile:
    """The entity's log profile (an empty one for an entity without logs)."""
    analysis = analyse(ctx)
    return analysis.profiles.get(entity) or LogProfile(entity, analysis.comparison.kind)
