"""The traces profile of an investigation: its spans analysed once (cached), and each service's own time
and delayed caller recorded as facts for the stages that read them (`rca.tools.facts`)."""

from __future__ import annotations

from rca.tools.base import ToolContext
from rca.tools.spans import span_frame
from rca.tools.traces.analysis import TraceAnalysis, TraceProfile, delayed_callers, own_time_z, profile_spans

CACHE_KEY = "traces.analysis"


def analyse(ctx: ToolContext) -> TraceAnalysis:
    """Profile every service's spans once per investigation (cached in `ctx.cache`)."""
    cached = ctx.cache.get(CACHE_KEY)
    if isinstance(cached, TraceAnalysis):
        return cached
    frame, cmp = span_frame(ctx)
    result = profile_spans(frame, cmp, [*ctx.graph.names(), ctx.alert.entity], ctx.graph)
    ctx.record.own_time_z.update(own_time_z(result))
    ctx.record.delayed_from.update(delayed_callers(result))
    ctx.cache[CACHE_KEY] = result
    return result


def trace_profile(ctx: ToolContext, entity: str) -> TraceProfile:
    """The service's trace profile (an empty one for a service without spans)."""
    analysis = analyse(ctx)
    return analysis.profiles.get(entity) or TraceProfile(entity, analysis.comparison.kind)
