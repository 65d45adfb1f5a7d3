"""The metrics tool's hooks: its seeding scores and kind hints, the fault kinds and details it names
when a leader is refined, and the hop observations it records for forward path verification
(`rca.core.path_verification`)."""

from __future__ import annotations

import logging

import numpy as np

from rca.core.path_verification import Observation
from rca.telemetry.model import Direction, TelemetryError
from rca.tools.base import ToolContext
from rca.tools.faults import EXPLAINS, FAMILIES_OF_KIND, KIND_OF_FAMILY, FaultKind, symptom_family
from rca.tools.metrics.analysis import FamilyFinding
from rca.tools.metrics.profile import (
    alert_symptom,
    disqualified,
    error_burst,
    metric_profile,
    own_short_reference_z,
    own_z,
    silent,
)
from rca.tools.stats import KNEE, Family, family_of

log = logging.getLogger(__name__)

# An entity deviates when one of its metric families sits this many robust sigmas from its baseline
# (the noise knee, PAVE's "critical" z > 3).
DEVIATION_Z = KNEE


def scores(ctx: ToolContext) -> dict[str, float]:
    """Own-origin metric score per entity, weighted by how well each family explains the symptom.

    Series too short of baseline for a robust deviation are scored from their few points before onset
    (`own_short_reference_z`): seeding ranks, it never proves, so a thin reference may rank."""
    weights = EXPLAINS[symptom_family(ctx.alert.metric)]
    return {
        e: max(
            (
                w * max(own_z(ctx, e, f)[0], own_short_reference_z(ctx, e, f), _alerting_burst(ctx, e, f))
                for f, w in weights.items()
                if not disqualified(ctx, e, f)
            ),
            default=0.0,
        )
        # A pod that is gone fails the calls made to it: to the symptom, its silence shows as errors.
        + weights.get(Family.ERRORS, 0.0) * _silence_z(ctx, e)
        for e in ctx.graph.names()
    }


def _alerting_burst(ctx: ToolContext, entity: str, family: Family) -> float:
    """For the alerting entity's errors, its own burst of failures held for more than a sample beyond
    anything its baseline showed outside its episodes, net of its callees' (`error_burst`): the alert
    watched these failures, and a few failing minutes escape the window quantile `own_z` reads. With no
    callee failing as much, they began at the entity itself (the deepest failing entity is the origin)."""
    if family is not Family.ERRORS or entity != ctx.alert.entity:
        return 0.0
    return error_burst(ctx, entity, sustained=True)


def _silence_z(ctx: ToolContext, entity: str) -> float:
    found = silent(ctx, entity)
    return max(0.0, found.deviation.z) if found is not None else 0.0


def kind_hint(ctx: ToolContext, entity: str) -> FaultKind | None:
    """The kind named by the family that moved most at the entity itself (its own share), weighted as
    in `scores` by how well it explains the alert. Behind an availability alert (`alert_symptom`), a
    service that fails on its own (errors past the knee) is an errors suspect whatever else moved: its
    failures explain the alert in full, its latency only in part, and z-scores of different families
    do not compare (a latency baseline is tight, so a slowdown that failing work brings runs to far
    more sigma than the failures themselves)."""
    if silent(ctx, entity) is not None:
        return FaultKind.POD_FAILURE  # its telemetry stopped: whatever else it shows predates that
    if alert_symptom(ctx) is Family.ERRORS and own_z(ctx, entity, Family.ERRORS)[0] > KNEE:
        return FaultKind.ERRORS
    weights = EXPLAINS[symptom_family(ctx.alert.metric)]
    moved = [
        (max(own_z(ctx, entity, f)[0], _alerting_burst(ctx, entity, f)), weights.get(f, 0.0), f)
        for f in KIND_OF_FAMILY
    ]
    over = [(z * w, f) for z, w, f in moved if z > KNEE]
    if not over:
        return None
    return KIND_OF_FAMILY[max(over, key=lambda x: (x[0], x[1].value))[1]]


def kinds(ctx: ToolContext, entity: str) -> list[FaultKind]:
    """The kinds whose metric family moved at the entity itself, most first."""
    moved = [
        (own, family)
        for family in metric_profile(ctx, entity).findings
        if (own := own_z(ctx, entity, family)[0]) >= KNEE and family in KIND_OF_FAMILY
    ]
    found = [KIND_OF_FAMILY[f] for _, f in sorted(moved, key=lambda m: (-m[0], m[1].value))]
    return [FaultKind.POD_FAILURE, *found] if silent(ctx, entity) is not None else found


def details(ctx: ToolContext, entity: str, kind: FaultKind) -> list[str]:
    """`instance:<name>` for the instances whose series of the kind deviated, strongest first; the
    entity-wide series as `metric:<name>` when no instance reports one."""
    prof = metric_profile(ctx, entity)
    found = [f for family in FAMILIES_OF_KIND[kind] for f in prof.instances.get(family, {}).values()]
    found.sort(key=lambda f: (-f.deviation.z, f.instance or "", f.metric))
    named = [f"instance:{f.instance}" for f in found if f.instance is not None]
    if named:
        return named
    return [f"metric:{f.metric}" for f in found[:1]]


def observe(ctx: ToolContext, entity: str) -> Observation:
    """Whether `entity` deviated from its baseline and, if so, when it entered that state: the earliest
    time one of its deviating metric families crossed the knee and stayed there for a second sample."""
    try:
        found = metric_profile(ctx, entity)
        deviating = [f for family, f in found.findings.items() if found.z(family) >= DEVIATION_Z]
        if not found.findings:
            return Observation(deviates=None)  # nothing measured: the rule can't be checked
        if not deviating:
            return Observation(deviates=False)
        starts = [_activation(ctx, entity, finding) for finding in deviating]
    except TelemetryError:
        return Observation(deviates=None)  # the backend failed: the rule can't be checked
    earliest = min((start for start in starts if start is not None), default=None)
    strongest = max(found.z(family) for family in found.findings)
    return Observation(True, earliest[0] if earliest else None, earliest[1] if earliest else 0.0, strongest)


def record(ctx: ToolContext) -> None:
    """Record the hop observation of every entity the conclusion may put on a path (the graph's and the
    alerting one), and with each profile the series it examined."""
    for entity in dict.fromkeys([*ctx.graph.names(), ctx.alert.entity]):
        ctx.record.observations[entity] = observe(ctx, entity)


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
