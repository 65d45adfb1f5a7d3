"""Span durations kept as metrics: where a source has no spans but keeps each operation's span count and
duration histogram (the OpenTelemetry Collector's span metrics connector in Prometheus), how far each
service's operations slowed against their own past.

A span's duration includes the time it waited on its callees, so this is an upper bound on the service's
own time: a service none of whose operations slowed did not slow itself, whatever its server-side latency
metric says (that metric may have moved with the request mix, or with a bucket's interpolation); one
whose operations did slow may be the origin or may wait on one. Only the first reading is used
(`rca.tools.metrics.profile.spans_disown`), as the spans' own time is where a trace backend exists.

The comparison mirrors the traces analysis (`rca.tools.traces.analysis`): the reference is chosen as
for spans (`rca.tools.counts.comparison`, over the stretches the metrics cover, each minute with spans a
record of its service; the baseline is asked first, the `LOOKBACK` only when it holds too little), each
operation with `MIN_SPANS` spans in both periods is compared by the log of its median, a service's
shift is the mean over its operations weighted by the square root of their observed spans, and the
shifts are scored against the other services' (`LATENCY_FLOOR`).

A caller's record of its calls into a service (an edge series) is never disowned this way: it holds the
network between the two, which neither side's spans time.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd

from rca.telemetry.model import OperationDurations, TelemetryError, TimeWindow
from rca.tools.base import ToolContext
from rca.tools.counts import LOOKBACK, Comparison, ReferenceKind, comparison, robust_peer_z
from rca.tools.spans import EPSILON, LATENCY_FLOOR, MIN_SPANS, entity_mean

CACHE_KEY = "span_metrics.duration_z"
# The stretches span metrics cover are read per minute: a recording's span files are per minute, and a
# minute is four of the connectors' 15-second flushes.
COVERAGE_STEP = 60.0


@runtime_checkable
class SpanMetrics(Protocol):
    """A source that keeps spans as per-operation metrics (`rca.telemetry.live.LiveSource`)."""

    def span_coverage(self, window: TimeWindow, step: float) -> list[tuple[float, str]]:
        """(end of a `step`, service) for every step inside `window` that counted that service's spans."""
        ...

    def operation_durations(self, window: TimeWindow) -> list[OperationDurations]:
        """Each operation's span count and median duration inside `window`."""
        ...


def duration_z(ctx: ToolContext) -> dict[str, float]:
    """How far each service's span durations moved against their own past, from span metrics, for the
    services with enough spans in both periods (none without span metrics, without a reference period
    of their own, or when the backend fails; cached per investigation)."""
    cached = ctx.cache.get(CACHE_KEY)
    if isinstance(cached, dict):
        return cached
    found: dict[str, float] = {}
    if isinstance(ctx.source, SpanMetrics):
        try:
            found = _duration_z(ctx, ctx.source)
        except TelemetryError:
            found = {}  # the backend's state says why; nothing is known of the durations
    ctx.cache[CACHE_KEY] = found
    return found


def _compared(ctx: ToolContext, source: SpanMetrics, start: float) -> Comparison:
    """The comparison over the stretches span metrics cover from `start` to the incident's end."""
    points = source.span_coverage(TimeWindow(start, ctx.incident.end), COVERAGE_STEP)
    # A step's spans ended inside it: it stands at its middle.
    times = np.array([t for t, _ in points], dtype=np.float64) - COVERAGE_STEP / 2.0
    return comparison(ctx, times, np.array([e for _, e in points], dtype=object))


def _duration_z(ctx: ToolContext, source: SpanMetrics) -> dict[str, float]:
    # The baseline first: a cluster whose span metrics run without a break needs no more, and reading
    # back `LOOKBACK` costs its Prometheus twelve times the samples.
    cmp = _compared(ctx, source, min(ctx.baseline.start, ctx.incident.start))
    if cmp.kind is not ReferenceKind.BASELINE:
        cmp = _compared(ctx, source, ctx.incident.start - LOOKBACK)
    if cmp.reference is None:  # no stretch of their own before the onset: only peers to compare with
        return {}
    ref = _frame(source.operation_durations(cmp.reference))
    obs = _frame(source.operation_durations(cmp.observed))
    both = ref.add_suffix("_ref").join(obs.add_suffix("_obs"), how="inner")
    both = both[(both["spans_ref"] >= MIN_SPANS) & (both["spans_obs"] >= MIN_SPANS)]
    if both.empty:
        return {}
    shift = np.log(both["median_obs"] + EPSILON) - np.log(both["median_ref"] + EPSILON)
    means = entity_mean(shift, both["spans_obs"].pow(0.5))
    return robust_peer_z({str(e): float(v) for e, v in means.items()}, LATENCY_FLOOR)


def _frame(rows: list[OperationDurations]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "entity": [r.entity for r in rows],
            "name": [r.operation for r in rows],
            "spans": np.array([r.spans for r in rows], dtype=np.float64),
            "median": np.array([r.median for r in rows], dtype=np.float64),
        }
    ).set_index(["entity", "name"])
