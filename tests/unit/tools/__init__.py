"""A tiny in-memory telemetry source and context builder for the evidence tools' unit tests."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rca.telemetry.model import (
    LOGBACK_STATEMENT,
    Alert,
    Conventions,
    DependencyGraph,
    Edge,
    Entity,
    Event,
    LogRecord,
    MetricSeries,
    Modality,
    Span,
    TimeWindow,
)
from rca.tools.base import ToolContext

# The log format of the test lines: logback statement ids, then the request's trace and span ids.
LOGBACK = Conventions(statement_id=LOGBACK_STATEMENT, trace_markers=("TraceID:", "SpanID:"))
ONSET = 1_000.0
INCIDENT = TimeWindow(ONSET, ONSET + 300.0)
BASELINE = TimeWindow(ONSET - 600.0, ONSET)


@dataclass
class FakeSource:
    """Holds lists of records and answers the TelemetrySource queries over them."""

    edges: Sequence[tuple[str, str]]
    records: list[LogRecord] = field(default_factory=list)
    span_list: list[Span] = field(default_factory=list)
    conventions: Conventions = LOGBACK

    def modalities(self) -> frozenset[Modality]:
        return frozenset({Modality.LOGS, Modality.TRACES})

    def time_range(self) -> TimeWindow:
        return TimeWindow(0.0, 2_000.0)

    def topology(self) -> DependencyGraph:
        names = sorted({n for edge in self.edges for n in edge})
        return DependencyGraph(tuple(Entity(n) for n in names), tuple(Edge(a, b) for a, b in self.edges))

    def baseline_window(self, onset: float) -> TimeWindow | None:
        return TimeWindow(0.0, onset)

    def metric_names(self, entity: str) -> Sequence[str]:
        return []

    def metrics(
        self, entity: str, window: TimeWindow, names: Iterable[str] | None = None
    ) -> list[MetricSeries]:
        return []

    def logs(
        self, entity: str, window: TimeWindow, pattern: str | None = None, limit: int = 10_000
    ) -> list[LogRecord]:
        out = [
            r
            for r in self.records
            if r.entity == entity
            and window.contains(r.time)
            and (pattern is None or re.search(pattern, r.body))
        ]
        return sorted(out, key=lambda r: r.time)[:limit]

    def spans(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> list[Span]:
        out = [s for s in self.span_list if window.contains(s.start)]
        if entity is not None:
            traces = {s.trace_id for s in out if s.entity == entity}
            out = [s for s in out if s.trace_id in traces]
        return sorted(out, key=lambda s: s.start)[:limit]

    def events(self, window: TimeWindow, entity: str | None = None) -> list[Event]:
        return []


def context(
    source: FakeSource,
    *,
    incident: TimeWindow = INCIDENT,
    baseline: TimeWindow = BASELINE,
    onset: float = ONSET,
    entity: str = "front",
) -> ToolContext:
    """A tool context over `source` with an alert firing at `onset`."""
    alert = Alert(name="front latency", entity=entity, fired_at=onset)
    return ToolContext(source, alert, incident, baseline, source.topology())
