"""The changes profile of an investigation: the change events of the change window, read once, and the
canary comparison of each changed entity (cached), recorded as facts (`rca.tools.facts`) for the other
tools and the conclusion: what each change did, and the change citations."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace

from rca.core.grounding import CITATION_WINDOW_AFTER_S, CITATION_WINDOW_BEFORE_S, Citation
from rca.core.verdict import DEFAULT_THRESHOLDS
from rca.telemetry.model import Event, TelemetryError, TimeWindow
from rca.tools.base import ToolContext
from rca.tools.changes.analysis import (
    ALIGN_TOLERANCE_S,
    CITATION_KINDS,
    MOVED_Z,
    NEVER_SERVED_Z,
    SERVICE_FAMILIES,
    CanaryFinding,
    FamilyCanary,
    Rollout,
    canary,
    nearest,
    never_served,
    rollouts,
    split_instances,
)
from rca.tools.facts import ChangeFact, ChangeFacts
from rca.tools.stats import Family, deviation_from, family_of, floor_for, squash

log = logging.getLogger(__name__)


def change_window(ctx: ToolContext) -> TimeWindow:
    """Where a change can have caused the incident: [onset - 2 h, onset + 5 min] (the citation window)."""
    return TimeWindow(ctx.onset - CITATION_WINDOW_BEFORE_S, ctx.onset + CITATION_WINDOW_AFTER_S)


def changes_in_window(ctx: ToolContext, entity: str | None = None) -> list[Event]:
    """Change events (deploys, config changes, commits, PRs, scaling) in the change window, by time.

    All changes are fetched once per investigation and filtered per entity from the cache.
    """
    key = "changes.window"
    cached = ctx.cache.get(key)
    if not isinstance(cached, list):
        events = ctx.source.events(change_window(ctx))
        cached = sorted((e for e in events if e.kind.is_change), key=lambda e: (e.time, e.entity))
        ctx.cache[key] = cached
        ctx.record.citations = tuple(citations(cached))
    return [e for e in cached if entity is None or e.entity == entity]


def _pre_change(ctx: ToolContext, started_at: float) -> TimeWindow | None:
    """The entity's pre-change baseline: the context baseline, cut at the change (or the same length
    just before it when the baseline lies wholly after)."""
    end = min(ctx.baseline.end, started_at)
    if end > ctx.baseline.start:
        return TimeWindow(ctx.baseline.start, end)
    length = ctx.baseline.seconds
    return TimeWindow(started_at - length, started_at) if length > 0 else None


def _service_level(
    ctx: ToolContext, entity: str, after: TimeWindow, pre: TimeWindow, every_instance: bool = False
) -> dict[Family, FamilyCanary]:
    """Per family, the entity's instance-less (service-level) series after the change against before it;
    with `every_instance`, its per-instance series too (what a callee shows its callers, however it
    measures it).

    Errors and latency only: they are what callers see. Both views are computed from one read and cached
    per entity and windows, since callees are asked too when the caller's share is taken out.
    """
    key = f"changes.service_level.{entity}.{after.start}.{after.end}.{pre.start}.{pre.end}"
    cached = ctx.cache.get(key)
    own: dict[Family, FamilyCanary]
    every: dict[Family, FamilyCanary]
    if isinstance(cached, tuple):
        own, every = cached
    else:
        own, every = {}, {}
        span = TimeWindow(min(pre.start, after.start), max(pre.end, after.end))
        for s in ctx.source.metrics(entity, span):
            kind = family_of(s.name)
            if kind is None or kind[0] not in SERVICE_FAMILIES:
                continue
            family, direction = kind
            dev = deviation_from(s.within(pre), s.within(after).values, direction, floor_for(family))
            if dev is None:
                continue
            result = FamilyCanary(family, s.name, None, dev, len(s.within(after)), 0, service_wide=True)
            for out in (every, own) if s.instance is None else (every,):
                best = out.get(family)
                if best is None or (result.z, s.name) > (best.z, best.metric):
                    out[family] = result
        ctx.cache[key] = (own, every)
    return every if every_instance else own


def _baseline_only(
    ctx: ToolContext, entity: str, after: TimeWindow, pre: TimeWindow
) -> dict[Family, FamilyCanary]:
    """Without new-version instances: the entity's service-level change net of its callees' (whatever a
    callee shows in the same family and windows is inherited, as in the metrics tool, whether the
    callee measures it per service or per pod: a callee failing on some pods fails its callers' calls)."""
    own = _service_level(ctx, entity, after, pre)
    out: dict[Family, FamilyCanary] = {}
    for family, found in own.items():
        callee_zs = [
            max(0.0, c.baseline.z)
            for callee in ctx.graph.callees(entity)
            if callee != entity
            and (c := _service_level(ctx, callee, after, pre, every_instance=True).get(family)) is not None
            and c.baseline is not None
        ]
        inherited = max(callee_zs, default=0.0)
        if inherited >= MOVED_Z and found.baseline is not None:
            # A callee moved too: without a canary the entity's share cannot be told apart from what it
            # inherits, so none of it is credited to the change.
            inherited = max(inherited, found.baseline.z)
        out[family] = replace(found, inherited=inherited)
    return out


def _compare(ctx: ToolContext, entity: str, rollout: Rollout, events: tuple[Event, ...]) -> CanaryFinding:
    finding = CanaryFinding(entity, rollout, events)
    pre = _pre_change(ctx, rollout.started_at)
    start = min(ctx.incident.start, pre.start if pre else ctx.incident.start, rollout.started_at)
    series = [s for s in ctx.source.metrics(entity, TimeWindow(start, ctx.incident.end)) if s.instance]
    if pre is not None and pre.end <= start:  # a separate normal recording: fetch it on its own
        series += [s for s in ctx.source.metrics(entity, pre) if s.instance]
    after = TimeWindow(rollout.started_at, max(ctx.incident.end, rollout.started_at))
    new, old = split_instances(series, rollout, ctx.source.conventions)
    finding.new_instances = tuple(sorted(new))
    finding.old_instances = tuple(sorted(old))
    finding.split = bool(new)
    finding.never_served = not new and never_served(series, rollout, old, after)
    if new:
        finding.families = canary(series, new, old, after, pre)
        serving = [s.within(after) for s in series if s.instance in new]
        finding.new_since = min((float(s.timestamps.min()) for s in serving if len(s)), default=None)
    if pre is not None:
        # A family the new instances are not measured in is compared service-wide: a live cluster's
        # resources are per pod while its error ratio and latency are often per service only.
        wide = {f: c for f, c in _baseline_only(ctx, entity, after, pre).items() if f not in finding.families}
        finding.families |= wide
        if wide and finding.new_since is None:
            finding.new_since = rollout.started_at
    # The onset must follow the rollout: a change started after the alert fired, or a version that
    # served only after the change window closed, cannot have caused it.
    finding.aligned = (
        finding.new_since is not None
        and finding.new_since <= change_window(ctx).end
        and rollout.started_at <= ctx.onset + ALIGN_TOLERANCE_S
    )
    return finding


def canary_profile(ctx: ToolContext, entity: str) -> CanaryFinding | None:
    """The canary comparison of the change to `entity` nearest to onset; None when nothing changed.

    Cached per investigation. Raises TelemetryError when the backend fails (nothing is cached then).
    """
    key = f"changes.canary.{entity}"
    if key in ctx.cache:
        cached = ctx.cache[key]
        return cached if isinstance(cached, CanaryFinding) else None
    events = changes_in_window(ctx, entity)
    result = None
    if events:
        rollout = nearest(rollouts(events), ctx.onset)
        result = _compare(ctx, entity, rollout, tuple(events))
    ctx.cache[key] = result
    return result


def fact_of(ctx: ToolContext, entity: str) -> ChangeFact:
    """What the change to `entity` nearest onset did (an entity whose telemetry cannot be read is
    unknown, not cleared: it scores 0 and made nothing worse)."""
    try:
        finding = canary_profile(ctx, entity)
    except TelemetryError as exc:
        log.warning("changes: no canary for %s: %s", entity, exc)
        finding = None
    aligned = finding is not None and finding.aligned
    unserved = finding is not None and finding.never_served and started_by_onset(ctx, finding.rollout)
    z = finding.z() if finding is not None else 0.0
    score = max(z if aligned else 0.0, NEVER_SERVED_Z if unserved else 0.0)
    return ChangeFact(
        entity,
        by_onset=any(e.time <= ctx.onset + ALIGN_TOLERANCE_S for e in changes_in_window(ctx, entity)),
        score=score,
        moved=score >= MOVED_Z,
        made_worse=aligned and squash(z) >= DEFAULT_THRESHOLDS.anomaly_supports,
        never_served=unserved,
    )


def change_facts(ctx: ToolContext) -> ChangeFacts:
    """The facts of every entity changed in the window, recorded for the other tools and the conclusion
    (computed once per investigation)."""
    key = "changes.facts"
    cached = ctx.cache.get(key)
    if isinstance(cached, ChangeFacts):
        return cached
    facts = ChangeFacts({e: fact_of(ctx, e) for e in sorted({e.entity for e in changes_in_window(ctx)})})
    ctx.record.changes = facts
    ctx.cache[key] = facts
    return facts


def started_by_onset(ctx: ToolContext, rollout: Rollout) -> bool:
    """Whether the rollout had started by the onset hint (a later one cannot have caused the alert)."""
    return rollout.started_at <= ctx.onset + ALIGN_TOLERANCE_S


def citations(events: Iterable[Event]) -> list[Citation]:
    """Every change among `events` that names a reference, as a citation candidate."""
    return [
        Citation(CITATION_KINDS[e.kind], e.reference, e.entity, e.time, e.message)
        for e in events
        if e.reference and e.kind in CITATION_KINDS
    ]
