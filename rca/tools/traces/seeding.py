"""The traces tool's seeding hooks: each service's own-origin score and the kind it points to."""

from __future__ import annotations

from rca.tools.base import ToolContext
from rca.tools.faults import FaultKind
from rca.tools.traces.profile import analyse, trace_profile


def scores(ctx: ToolContext) -> dict[str, float]:
    """Own-origin trace score (z-like, >= 0) of every service, for seeding."""
    return {e: p.own for e, p in analyse(ctx).profiles.items()}


def kind_hint(ctx: ToolContext, entity: str) -> FaultKind | None:
    """LATENCY when the service's own time rose, ERRORS when its own errors or call structure moved."""
    return trace_profile(ctx, entity).kind
