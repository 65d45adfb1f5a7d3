"""The logs tool's seeding hooks: each entity's own-origin log score and the kind it points to."""

from __future__ import annotations

from rca.tools.base import ToolContext
from rca.tools.faults import FaultKind
from rca.tools.logs.profile import analyse, log_profile
from rca.tools.stats import KNEE


def scores(ctx: ToolContext) -> dict[str, float]:
    """Own-origin log score (z-like, >= 0, ~3 is noise) of every entity, for seeding."""
    return {e: p.own for e, p in analyse(ctx).profiles.items()}


def kind_hint(ctx: ToolContext, entity: str) -> FaultKind | None:
    """ERRORS when the entity's own log signal moved (a broken pair, new error templates, a WARN+
    burst); None when its logs say nothing."""
    return FaultKind.ERRORS if log_profile(ctx, entity).own >= KNEE else None
