"""The telemetry side of forward path verification: what each entity on a path shows, and each hop's
check by the rules in `rca.core.path_verification`."""

from __future__ import annotations

import numpy as np

from rca.core.path_verification import HopVerification, Observation, verify_hop
from rca.telemetry.model import TelemetryError
from rca.tools.base import ToolContext
from rca.tools.metrics import FamilyFinding, profile
from rca.tools.stats import KNEE, Direction, family_of

# An entity deviates when one of its metric families sits this many robust sigmas from its baseline
# (the noise knee, PAVE's "critical" z > 3).
DEVIATION_Z = KNEE


def observe(ctx: ToolContext, entity: str) -> Observation:
    """Whether `entity` deviated from its baseline and, if so, when it entered that state: the earliest
    time one of its deviating metric families crossed the knee and stayed there for a second sample."""
    key = f"path_checks.observe.{entity}"
    cached = ctx.cache.get(key)
    if isinstance(cached, Observation):
        return cached
    try:
        observation = _observed(ctx, entity)
    except TelemetryError:
        observation = Observation(deviates=None)  # the backend failed: the rule can't be checked
    ctx.cache[key] = observation
    return observation


def _observed(ctx: ToolContext, entity: str) -> Observation:
    found = profile(ctx, entity)
    deviating = [f for family, f in found.findings.items() if found.z(family) >= DEVIATION_Z]
    if not found.findings:
        return Observation(deviates=None)  # nothing measured: the rule can't be checked
    if not deviating:
        return Observation(deviates=False)
    starts = [_activation(ctx, entity, finding) for finding in deviating]
    earliest = min((start for start in starts if start is not None), default=None)
    return Observation(True, earliest[0] if earliest else None, earliest[1] if earliest else 0.0)


def _activation(ctx: ToolContext, entity: str, finding: FamilyFinding) -> tuple[float, float] | None:
    """When the finding's series first sat beyond the knee for two samples in a row, and its sampling
    step (how precisely that time is known); None when it never did."""
    kind = family_of(finding.metric)
    if kind is None:
        return None
    direction = kind[1]
    dev = finding.deviation
    for series in ctx.source.metrics(entity, ctx.incident, names=[finding.metric]):
        if series.instance != finding.instance or series.timestamps.size < 2:
            continue
        shift = series.values - dev.baseline
        if direction is Direction.DOWN:
            shift = -shift
        elif direction is Direction.BOTH:
            shift = np.abs(shift)
        beyond = np.nan_to_num(shift / dev.spread, nan=0.0) >= DEVIATION_Z
        held = np.flatnonzero(beyond[:-1] & beyond[1:])
        if held.size:
            step = float(np.median(np.diff(series.timestamps)))
            return float(series.timestamps[held[0]]), step
    return None


def check_hop(ctx: ToolContext, cause: str, effect: str) -> HopVerification:
    """The three rules for `cause -> effect`: either direction of a call counts as the edge (a fault
    reaches callers through responses and callees through requests)."""
    graph = ctx.graph
    edge = graph.has_edge(effect, cause) or graph.has_edge(cause, effect)
    return verify_hop(edge, observe(ctx, cause), observe(ctx, effect))
