"""Changes: deploys, config changes and commits in the onset window, and whether one made things worse.

A change in the window is the change citation, not proof: rollouts are often concurrent and most of
them are healthy. The tool therefore supports "a bad deploy of X" only when the data shows the change
made X worse, by a canary comparison: X's new-version instances against its old-version instances over
the same minutes (a comparison inside one service, so it is origin-specific: whatever X's callees do
reaches old and new instances alike), and against X's own pre-change baseline. A change that shows no
deviation is inconclusive, never a refutation (a quiet canary does not clear a suspect), and so is a
failed query.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from rca.core.evidence import SignalValue, Source
from rca.core.grounding import (
    CITATION_WINDOW_AFTER_S,
    CITATION_WINDOW_BEFORE_S,
    Citation,
    CitationKind,
    nearest_citation,
)
from rca.core.hypotheses import Hypothesis
from rca.core.levels import detail_parts
from rca.core.verdict import DEFAULT_THRESHOLDS
from rca.telemetry.model import Event, EventKind, FloatArray, MetricSeries, TelemetryError, TimeWindow
from rca.tools.base import ToolContext, ToolResult
from rca.tools.faults import FAMILIES_OF_KIND, FaultKind
from rca.tools.stats import Deviation, Direction, Family, deviation, family_of, same_stream, squash

log = logging.getLogger(__name__)

# The families a defective release shows on its own instances (what the canary compares).
CANARY_FAMILIES: tuple[Family, ...] = FAMILIES_OF_KIND[FaultKind.BAD_DEPLOY]
# A canary z at or above this means the change moved something (the knee of `squash`).
MOVED_Z = 3.0
# Fewest points per side for a comparison.
MIN_POINTS = 2
# A new instance's first minutes are left out: a cold start (JIT, caches) is slow in any version.
WARMUP_S = 120.0
# What callers see of a service: the families a service-level (instance-less) comparison reads.
SERVICE_FAMILIES: tuple[Family, ...] = (Family.ERRORS, Family.LATENCY)
# A comparison against the pre-change baseline alone (no old/new split) is not origin-specific: a
# concurrent change elsewhere can move the entity too, so it counts for less than a canary.
BASELINE_ONLY_WEIGHT = 0.5
# A rollout whose new version has not reported a single point this long after it started (and for at
# least this many of the entity's sampling intervals) is taken as one whose new version never served.
NEVER_SERVED_AFTER_S = 180.0
NEVER_SERVED_SAMPLES = 3
# The seeding score of a rollout whose new version never served: a lead for ranking (a version that
# never became ready is the classic failed rollout), never proof. As strong as a canary that clearly
# moved, and weaker than one that demonstrably made its service worse.
NEVER_SERVED_Z = 6.0
# A rollout must have started by the onset hint (the alert fires after the fault starts, so a change
# that starts after it cannot have caused it); a tolerance may absorb a coarse alert clock.
ALIGN_TOLERANCE_S = 0.0

_CITATION_KINDS: dict[EventKind, CitationKind] = {
    EventKind.DEPLOY: "deploy",
    EventKind.SCALE: "deploy",
    EventKind.CONFIG_CHANGE: "config",
    EventKind.COMMIT: "commit",
    EventKind.PULL_REQUEST: "pr",
}


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
    return [e for e in cached if entity is None or e.entity == entity]


@dataclass(frozen=True)
class Rollout:
    """One change to one entity: the events sharing a reference (a rollout's start and its steps)."""

    entity: str
    kind: EventKind
    reference: str | None
    started_at: float
    events: tuple[Event, ...]


def rollouts(events: Iterable[Event]) -> list[Rollout]:
    """Group one entity's change events by (kind, reference), ordered by start time."""
    groups: dict[tuple[str, EventKind, str | None], list[Event]] = {}
    for event in events:
        groups.setdefault((event.entity, event.kind, event.reference), []).append(event)
    out = [
        Rollout(entity, kind, ref, min(e.time for e in group), tuple(sorted(group, key=lambda e: e.time)))
        for (entity, kind, ref), group in groups.items()
    ]
    return sorted(out, key=lambda r: (r.started_at, r.reference or ""))


def _nearest(items: Sequence[Rollout], onset: float) -> Rollout:
    # As for the citation: a change at or before onset beats a later one, then the nearest wins.
    return min(items, key=lambda r: (r.started_at > onset, abs(r.started_at - onset), r.reference or ""))


# --- splitting instances into new and old versions ------------------------------------------------------
def _stem(instance: str) -> str:
    """The instance name without its per-replica suffix (`svc-v2-fd6989b7c-6xff2` -> `svc-v2-fd6989b7c`)."""
    return instance.rsplit("-", 1)[0] if "-" in instance else instance


_VERSION = re.compile(r"(?:^|-)v(\d+)(?:-|$)")


def _version(stem: str) -> int | None:
    match = _VERSION.search(stem)
    return int(match.group(1)) if match else None


def split_instances(
    series: Sequence[MetricSeries], rollout: Rollout
) -> tuple[frozenset[str], frozenset[str]]:
    """(new, old) instance names of one entity around `rollout`.

    The deploy's own events decide when they can: the instances it names and those whose name carries
    its reference are new, with every replica of their stem. Otherwise names that differ only by a
    version-like token or replica-set hash are grouped by stem; a stem first seen at or after the
    rollout started is new (ties broken by the higher `v<n>`), the others are old.
    """
    first_seen: dict[str, float] = {}
    for s in series:
        finite = s.timestamps[np.isfinite(s.values)]
        if s.instance is None or finite.size == 0:
            continue
        first_seen[s.instance] = min(first_seen.get(s.instance, math.inf), float(finite.min()))
    stems = {inst: _stem(inst) for inst in first_seen}
    named = {e.instance for e in rollout.events if e.instance}
    new_stems = {_stem(i) for i in named}
    if rollout.reference:
        token = f"-{rollout.reference}-"
        new_stems |= {stem for inst, stem in stems.items() if token in f"-{inst}-"}
    if not new_stems:
        stem_start: dict[str, float] = {}
        for inst, stem in stems.items():
            stem_start[stem] = min(stem_start.get(stem, math.inf), first_seen[inst])
        if len(stem_start) > 1:
            fresh = {s for s, t in stem_start.items() if t >= rollout.started_at}
            versions = {s: _version(s) for s in stem_start}
            if not fresh and all(v is not None for v in versions.values()):
                top = max(v for v in versions.values() if v is not None)
                if list(versions.values()).count(top) < len(versions):
                    fresh = {s for s, v in versions.items() if v == top}
            new_stems = fresh if len(fresh) < len(stem_start) else set()
    new = frozenset(i for i, s in stems.items() if s in new_stems)
    old = frozenset(i for i, s in stems.items() if s not in new_stems and first_seen[i] < rollout.started_at)
    return new, old


def _values(series: Iterable[MetricSeries], window: TimeWindow) -> FloatArray:
    parts = [s.within(window).values for s in series]
    values = np.concatenate(parts) if parts else np.empty(0)
    return values[np.isfinite(values)]


# --- the canary comparison --------------------------------------------------------------------------------
@dataclass(frozen=True)
class FamilyCanary:
    """One family's strongest metric: new instances after the rollout against old ones and the baseline.

    `growth` (memory only) is the new instances' rise from their own first values: a new version may
    legitimately sit at another memory level, what makes it bad is a leak. `weight` is below 1 for a
    comparison that could not split the instances (pre-change baseline only, not origin-specific).
    """

    family: Family
    metric: str
    canary: Deviation | None  # new instances vs old instances over the same minutes
    baseline: Deviation | None  # new instances vs the entity's pre-change values
    new_points: int
    old_points: int
    growth: Deviation | None = None
    inherited: float = 0.0  # the part a callee's own deviation explains (baseline-only comparisons)
    weight: float = 1.0

    @property
    def z(self) -> float:
        """The evidence that the new version is worse: worse than the old version now AND than before
        the change (a shared cause would move old instances too), or whichever comparison exists."""
        if self.family is Family.MEMORY and self.growth is None:
            return 0.0  # a level alone is no leak
        zs = [d.z for d in (self.canary, self.baseline, self.growth) if d is not None]
        return (min(zs) - self.inherited) * self.weight if zs else 0.0


@dataclass
class CanaryFinding:
    """What the change to one entity did to it."""

    entity: str
    rollout: Rollout
    changes: tuple[Event, ...]
    new_instances: tuple[str, ...] = ()
    old_instances: tuple[str, ...] = ()
    new_since: float | None = None  # first data point of a new instance
    aligned: bool = False  # the rollout started by onset and its version served in the change window
    split: bool = False  # False: no new-version instances, the entity's pre-change baseline only
    never_served: bool = False  # the rollout named its new version, which never reported while old ones did
    families: dict[Family, FamilyCanary] = field(default_factory=dict)

    def strongest(self, families: Iterable[Family] = CANARY_FAMILIES) -> FamilyCanary | None:
        """The family that moved most among `families` (None when none could be compared)."""
        found = [self.families[f] for f in families if f in self.families]
        return max(found, key=lambda c: (c.z, c.family.value), default=None)

    def z(self, families: Iterable[Family] = CANARY_FAMILIES) -> float:
        """The canary z over `families` (>= 0)."""
        best = self.strongest(families)
        return max(0.0, best.z) if best else 0.0


def _pre_change(ctx: ToolContext, started_at: float) -> TimeWindow | None:
    """The entity's pre-change baseline: the context baseline, cut at the change (or the same length
    just before it when the baseline lies wholly after)."""
    end = min(ctx.baseline.end, started_at)
    if end > ctx.baseline.start:
        return TimeWindow(ctx.baseline.start, end)
    length = ctx.baseline.seconds
    return TimeWindow(started_at - length, started_at) if length > 0 else None


def _warm(series: MetricSeries, after: TimeWindow) -> MetricSeries:
    """A new instance's points after its warm-up (a cold start is slow in any version)."""
    part = series.within(after)
    if not len(part):
        return part
    start = float(part.timestamps.min()) + WARMUP_S
    warm = part.within(TimeWindow(start, max(after.end, start)))
    # Too young to lose its first minutes: judged on what there is.
    return warm if np.isfinite(warm.values).sum() >= MIN_POINTS else part


def _growth(fresh: Sequence[MetricSeries], direction: Direction) -> Deviation | None:
    """The strongest rise of a new instance from its first half to its second half in the window."""
    found = []
    for s in fresh:
        values = s.values[np.isfinite(s.values)]
        half = values.size // 2
        if half >= 3:  # `deviation` needs three baseline points
            dev = deviation(values[:half], values[half:], direction)
            if dev is not None:
                found.append(dev)
    return max(found, key=lambda d: d.z, default=None)


def _canary(
    series: Sequence[MetricSeries],
    new: frozenset[str],
    old: frozenset[str],
    after: TimeWindow,
    pre: TimeWindow | None,
) -> dict[Family, FamilyCanary]:
    """Per family, the metric whose new instances deviate most from the old ones and the baseline."""
    by_name: dict[str, list[MetricSeries]] = {}
    for s in series:
        by_name.setdefault(s.name, []).append(s)
    out: dict[Family, FamilyCanary] = {}
    for name, group in sorted(by_name.items()):
        kind = family_of(name)
        if kind is None or kind[0] not in CANARY_FAMILIES:
            continue
        family, direction = kind
        fresh = [s for s in group if s.instance in new]
        # An old instance reporting exactly a new one's points is the new stream under an old name.
        stale = [
            s
            for s in group
            if s.instance in old and not any(same_stream(s.within(after), f.within(after)) for f in fresh)
        ]
        warm = [_warm(s, after) for s in fresh]
        new_vals = _values(warm, after)
        if new_vals.size < MIN_POINTS:
            continue
        old_vals = _values(stale, after)
        canary = deviation(old_vals, new_vals, direction) if old_vals.size >= MIN_POINTS else None
        base = deviation(_values(group, pre), new_vals, direction) if pre is not None else None
        if canary is None and base is None:
            continue
        growth = _growth(warm, direction) if family is Family.MEMORY else None
        result = FamilyCanary(family, name, canary, base, int(new_vals.size), int(old_vals.size), growth)
        best = out.get(family)
        if best is None or (result.z, name) > (best.z, best.metric):
            out[family] = result
    return out


def _service_level(
    ctx: ToolContext, entity: str, after: TimeWindow, pre: TimeWindow
) -> dict[Family, FamilyCanary]:
    """Per family, the entity's instance-less (service-level) series after the change against before it.

    Errors and latency only: they are what callers see. Cached per entity and windows, since callees
    are asked too when the caller's share is taken out.
    """
    key = f"changes.service_level.{entity}.{after.start}.{after.end}.{pre.start}.{pre.end}"
    cached = ctx.cache.get(key)
    if isinstance(cached, dict):
        return cached
    out: dict[Family, FamilyCanary] = {}
    span = TimeWindow(min(pre.start, after.start), max(pre.end, after.end))
    for s in ctx.source.metrics(entity, span):
        kind = family_of(s.name)
        if s.instance is not None or kind is None or kind[0] not in SERVICE_FAMILIES:
            continue
        family, direction = kind
        dev = deviation(s.within(pre).values, s.within(after).values, direction)
        if dev is None:
            continue
        result = FamilyCanary(family, s.name, None, dev, len(s.within(after)), 0, weight=BASELINE_ONLY_WEIGHT)
        best = out.get(family)
        if best is None or (result.z, s.name) > (best.z, best.metric):
            out[family] = result
    ctx.cache[key] = out
    return out


def _baseline_only(
    ctx: ToolContext, entity: str, after: TimeWindow, pre: TimeWindow
) -> dict[Family, FamilyCanary]:
    """Without new-version instances: the entity's service-level change net of its callees' (whatever a
    callee shows in the same family and windows is inherited, as in the metrics tool)."""
    own = _service_level(ctx, entity, after, pre)
    out: dict[Family, FamilyCanary] = {}
    for family, found in own.items():
        callee_zs = [
            max(0.0, c.baseline.z)
            for callee in ctx.graph.callees(entity)
            if callee != entity
            and (c := _service_level(ctx, callee, after, pre).get(family)) is not None
            and c.baseline is not None
        ]
        inherited = max(callee_zs, default=0.0)
        if inherited >= MOVED_Z and found.baseline is not None:
            # A callee moved too: without a canary the entity's share cannot be told apart from what it
            # inherits, so none of it is credited to the change.
            inherited = max(inherited, found.baseline.z)
        out[family] = FamilyCanary(
            family,
            found.metric,
            None,
            found.baseline,
            found.new_points,
            0,
            inherited=inherited,
            weight=found.weight,
        )
    return out


def _never_served(
    series: Sequence[MetricSeries], rollout: Rollout, old: frozenset[str], after: TimeWindow
) -> bool:
    """Whether the rollout's new version never reported while its old version kept reporting.

    Only a rollout that names its new instances (or whose reference tags them) can be said to have none
    reporting; the old instances must still report after the change (so the entity is observed at all),
    and the rollout must have had time to serve: several sampling intervals and a few minutes.
    """
    if not rollout.reference and not any(e.instance for e in rollout.events):
        return False
    reporting = [s.within(after) for s in series if s.instance in old]
    stamps = [s.timestamps[np.isfinite(s.values)] for s in reporting]
    stamps = [t for t in stamps if t.size]
    if not stamps:
        return False
    steps = [float(np.median(np.diff(np.unique(t)))) for t in stamps if np.unique(t).size > 1]
    interval = min(steps, default=0.0)
    waited = max(float(t.max()) for t in stamps) - rollout.started_at
    return waited >= max(NEVER_SERVED_AFTER_S, NEVER_SERVED_SAMPLES * interval)


def _compare(ctx: ToolContext, entity: str, rollout: Rollout, events: tuple[Event, ...]) -> CanaryFinding:
    finding = CanaryFinding(entity, rollout, events)
    pre = _pre_change(ctx, rollout.started_at)
    start = min(ctx.incident.start, pre.start if pre else ctx.incident.start, rollout.started_at)
    series = [s for s in ctx.source.metrics(entity, TimeWindow(start, ctx.incident.end)) if s.instance]
    if pre is not None and pre.end <= start:  # a separate normal recording: fetch it on its own
        series += [s for s in ctx.source.metrics(entity, pre) if s.instance]
    after = TimeWindow(rollout.started_at, max(ctx.incident.end, rollout.started_at))
    new, old = split_instances(series, rollout)
    finding.new_instances = tuple(sorted(new))
    finding.old_instances = tuple(sorted(old))
    finding.split = bool(new)
    finding.never_served = not new and _never_served(series, rollout, old, after)
    if new:
        finding.families = _canary(series, new, old, after, pre)
        serving = [s.within(after) for s in series if s.instance in new]
        finding.new_since = min((float(s.timestamps.min()) for s in serving if len(s)), default=None)
    elif pre is not None:
        finding.families = _baseline_only(ctx, entity, after, pre)
        finding.new_since = rollout.started_at if finding.families else None
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
        rollout = _nearest(rollouts(events), ctx.onset)
        result = _compare(ctx, entity, rollout, tuple(events))
    ctx.cache[key] = result
    return result


def changed_by_onset(ctx: ToolContext) -> set[str]:
    """Entities with a change that had started by the onset hint (a later one cannot have caused it)."""
    return {e.entity for e in changes_in_window(ctx) if e.time <= ctx.onset + ALIGN_TOLERANCE_S}


def made_worse(ctx: ToolContext, entity: str) -> bool:
    """Whether the change to `entity` nearest onset shows its new version worse, as strongly as the tool
    needs to support a bad deploy. A failed query proves nothing either way (False)."""
    try:
        finding = canary_profile(ctx, entity)
    except TelemetryError:
        return False
    if finding is None or not finding.aligned:
        return False
    return squash(finding.z()) >= DEFAULT_THRESHOLDS.anomaly_supports


def never_served(ctx: ToolContext, entity: str) -> bool:
    """Whether the change to `entity` nearest onset started by onset and its new version never reported
    (so what the entity's metrics show is its old version only). A failed query says nothing (False)."""
    try:
        finding = canary_profile(ctx, entity)
    except TelemetryError:
        return False
    return finding is not None and finding.never_served and _started_by_onset(ctx, finding.rollout)


def entity_scores(ctx: ToolContext) -> dict[str, float]:
    """A z-like score (>= 0) per entity changed in the window: how much worse its new version is.

    An entity whose telemetry cannot be read scores 0 (unknown, not cleared).
    """
    scores: dict[str, float] = {}
    for entity in sorted({e.entity for e in changes_in_window(ctx)}):
        try:
            finding = canary_profile(ctx, entity)
        except TelemetryError as exc:
            log.warning("changes: no canary for %s: %s", entity, exc)
            finding = None
        scores[entity] = finding.z() if finding and finding.aligned else 0.0
        if finding is not None and finding.never_served and _started_by_onset(ctx, finding.rollout):
            scores[entity] = max(scores[entity], NEVER_SERVED_Z)
    return scores


def _started_by_onset(ctx: ToolContext, rollout: Rollout) -> bool:
    return rollout.started_at <= ctx.onset + ALIGN_TOLERANCE_S


def kind_hint(ctx: ToolContext, entity: str) -> FaultKind | None:
    """BAD_DEPLOY when a change to `entity` is in the window and its new version moved or never served;
    else None."""
    finding = canary_profile(ctx, entity)
    if finding is not None and finding.never_served and _started_by_onset(ctx, finding.rollout):
        return FaultKind.BAD_DEPLOY
    if finding is None or not finding.aligned or finding.z() < MOVED_Z:
        return None
    return FaultKind.BAD_DEPLOY


def citations(ctx: ToolContext) -> list[Citation]:
    """Every change in the citation window that names a reference, as a citation candidate."""
    return [
        Citation(_CITATION_KINDS[e.kind], e.reference, e.entity, e.time, e.message)
        for e in changes_in_window(ctx)
        if e.reference and e.kind in _CITATION_KINDS
    ]


def citation_for(ctx: ToolContext, entity: str, path_entities: Iterable[str] = ()) -> Citation | None:
    """The change citation for a conclusion about `entity` (and the propagation path): the verifiable
    change nearest to onset, chosen by the core; None when there is none (never guessed)."""
    return nearest_citation(citations(ctx), ctx.onset, entities={entity, *path_entities})


# --- the tool -----------------------------------------------------------------------------------------------
def _relative(seconds: float) -> str:
    minutes = abs(seconds) / 60.0
    return f"{minutes:.1f} min {'before' if seconds <= 0 else 'after'} onset"


def _families_of(fault_kind: str) -> tuple[Family, ...]:
    try:
        families = FAMILIES_OF_KIND[FaultKind(fault_kind)]
    except ValueError:
        return CANARY_FAMILIES
    return tuple(f for f in families if f in CANARY_FAMILIES) or CANARY_FAMILIES


def _measure(finding: CanaryFinding, best: FamilyCanary, z: float, score: float) -> dict[str, SignalValue]:
    """The canary figures kept with the evidence (never classified)."""
    out: dict[str, SignalValue] = {
        "family": best.family.value,
        "metric": best.metric,
        "comparison": "canary" if finding.split else "baseline_only",
        "z": round(z, 3),
        "score": score,
        "new_points": best.new_points,
        "old_points": best.old_points,
    }
    if best.canary is not None:
        out |= {"canary_z": round(best.canary.z, 3), "new_value": best.canary.observed}
        out["old_value"] = best.canary.baseline
    if best.baseline is not None:
        out |= {"pre_change_z": round(best.baseline.z, 3), "pre_change_value": best.baseline.baseline}
        out["observed"] = best.baseline.observed
    if best.growth is not None:
        out["growth_z"] = round(best.growth.z, 3)
    if best.inherited > 0:
        out["inherited_z"] = round(best.inherited, 3)  # what a callee shows (baseline-only comparisons)
    if finding.new_since is not None:
        out["new_since"] = finding.new_since
    return out


def _describe(finding: CanaryFinding, best: FamilyCanary) -> str:
    """`metric: new vs old (z), vs pre-change (z)` for a canary, `metric: before -> after (z)` otherwise."""
    if best.canary is not None:
        canary = best.canary
        text = f"{best.metric} new {canary.observed:.4g} vs old {canary.baseline:.4g} (z {canary.z:.1f})"
        if best.baseline is not None:
            text += f", vs pre-change {best.baseline.baseline:.4g} (z {best.baseline.z:.1f})"
        return text
    if best.baseline is None:
        return best.metric
    where = "on new instances" if finding.split else "service-wide, no new-version instances"
    inherited = f", callees {best.inherited:.1f}" if best.inherited > 0 else ""
    return (
        f"{best.metric} {where} {best.baseline.baseline:.4g} -> {best.baseline.observed:.4g} "
        f"(z {best.baseline.z:.1f}{inherited})"
    )


class ChangesTool:
    """Did a change to `entity` in the onset window make it worse?

    Supports (anomaly_score >= 0.8) only when the canary shows the new version worse; a change with a
    quiet canary, a change after onset, or no change at all carries no decisive signal (inconclusive).
    """

    name = "changes"
    source = Source.CHANGES

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Name the change and score its canary; no decisive signal when nothing changed."""
        entity = hypothesis.entity
        finding = canary_profile(ctx, entity)
        if finding is None:
            return ToolResult(summary=f"changes: no change to {entity} in the window")
        rollout = finding.rollout
        ref = rollout.reference or "-"
        change = f"{rollout.kind.value} {ref} to {entity} {_relative(rollout.started_at - ctx.onset)}"
        measurements: dict[str, SignalValue] = {
            "change_kind": rollout.kind.value,
            "reference": ref,
            "change_at": rollout.started_at,
            "change_offset_s": round(rollout.started_at - ctx.onset, 1),
            "changes_in_window": len(finding.changes),
            "new_instances": len(finding.new_instances),
            "old_instances": len(finding.old_instances),
        }
        if finding.never_served:
            measurements["new_version_served"] = "no"  # a lead for ranking, not a fault signal
        what, named = detail_parts(hypothesis)
        if what == "change" and named != ref:
            return ToolResult(
                summary=f"changes: {named} is not the change nearest to onset at {entity} ({change})",
                measurements=measurements,
            )
        if rollout.started_at > ctx.onset + ALIGN_TOLERANCE_S:
            return ToolResult(
                summary=f"changes: {change}; it started after the alert", measurements=measurements
            )
        best = finding.strongest(_families_of(hypothesis.fault_kind))
        if best is None or not finding.aligned:
            return ToolResult(summary=f"changes: {change}; nothing to compare", measurements=measurements)
        z = max(0.0, best.z)
        score = round(squash(z), 4)
        measurements |= _measure(finding, best, z, score)
        if score <= DEFAULT_THRESHOLDS.anomaly_refutes:
            # A quiet canary does not clear the change: no decisive signal, so the verdict stays
            # inconclusive instead of the refutation a near-zero anomaly score would give. The text
            # names no metric, so no metric name can read as a fault cue.
            summary = f"changes: {change}; its new version does not deviate (z {z:.1f})"
            return ToolResult(summary=summary, measurements=measurements)
        summary = f"changes: {change}; {_describe(finding, best)}"
        return ToolResult(summary=summary, signals={"anomaly_score": score}, measurements=measurements)
