"""Changes analysis, pure functions over change events and metric series: rollouts, which instances
run a rollout's new version, and the canary comparison of new against old instances.

A change in the window is the change citation, not proof: rollouts are often concurrent and most of
them are healthy. A change is shown to have made its entity X worse by a canary comparison: X's
new-version instances against its old-version instances over the same minutes (a comparison inside one
service, so it is origin-specific: whatever X's callees do reaches old and new instances alike), and
against X's own pre-change baseline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from rca.core.grounding import CitationKind
from rca.telemetry.model import Conventions, Direction, Event, EventKind, FloatArray, MetricSeries, TimeWindow
from rca.tools.faults import FAMILIES_OF_KIND, FaultKind
from rca.tools.stats import Deviation, Family, deviation, family_of, floor_for, reference_floor, same_stream

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

CITATION_KINDS: dict[EventKind, CitationKind] = {
    EventKind.DEPLOY: "deploy",
    EventKind.SCALE: "deploy",
    EventKind.CONFIG_CHANGE: "config",
    EventKind.COMMIT: "commit",
    EventKind.PULL_REQUEST: "pr",
}


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


def nearest(items: Sequence[Rollout], onset: float) -> Rollout:
    """The rollout nearest to onset: as for the citation, one at or before onset beats a later one."""
    return min(items, key=lambda r: (r.started_at > onset, abs(r.started_at - onset), r.reference or ""))


# --- splitting instances into new and old versions ------------------------------------------------------
def _stem(instance: str) -> str:
    """The instance name without its per-replica suffix (`orders-5d8f7c9b4-x2k7q` -> `orders-5d8f7c9b4`)."""
    return instance.rsplit("-", 1)[0] if "-" in instance else instance


def _version(stem: str, token: re.Pattern[str] | None) -> int | None:
    match = token.search(stem) if token is not None else None
    return int(match.group(1)) if match else None


def split_instances(
    series: Sequence[MetricSeries], rollout: Rollout, conventions: Conventions
) -> tuple[frozenset[str], frozenset[str]]:
    """(new, old) instance names of one entity around `rollout`.

    The deploy's own events decide when they can: the instances it names and those whose name carries
    its reference are new, with every replica of their stem. Otherwise names that differ only by a
    version token or replica-set hash are grouped by stem; a stem first seen at or after the rollout
    started is new (ties broken by the higher version, where the source's instance names carry one:
    `Conventions.version_token`), the others are old.
    """
    version = re.compile(conventions.version_token) if conventions.version_token else None
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
            versions = {s: _version(s, version) for s in stem_start}
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
    legitimately sit at another memory level, what makes it bad is a leak. `service_wide` marks a
    comparison that could not split the instances (the entity's series before and after the change,
    not origin-specific): it weighs `BASELINE_ONLY_WEIGHT`.
    """

    family: Family
    metric: str
    canary: Deviation | None  # new instances vs old instances over the same minutes
    baseline: Deviation | None  # new instances vs the entity's pre-change values
    new_points: int
    old_points: int
    growth: Deviation | None = None
    inherited: float = 0.0  # the part a callee's own deviation explains (baseline-only comparisons)
    service_wide: bool = False

    @property
    def weight(self) -> float:
        """How much this comparison counts against a canary's."""
        return BASELINE_ONLY_WEIGHT if self.service_wide else 1.0

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


def canary(
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
        # The old instances' (and the pre-change) values are the reference: their bucket resolution, if any.
        old_res = max((reference_floor(s.within(after)) for s in stale), default=0.0)
        canary = (
            deviation(old_vals, new_vals, direction, floor_for(family), old_res)
            if old_vals.size >= MIN_POINTS
            else None
        )
        pre_res = (
            max((reference_floor(s.within(pre)) for s in group), default=0.0) if pre is not None else 0.0
        )
        base = (
            deviation(_values(group, pre), new_vals, direction, floor_for(family), pre_res)
            if pre is not None
            else None
        )
        if canary is None and base is None:
            continue
        growth = _growth(warm, direction) if family is Family.MEMORY else None
        result = FamilyCanary(family, name, canary, base, int(new_vals.size), int(old_vals.size), growth)
        best = out.get(family)
        if best is None or (result.z, name) > (best.z, best.metric):
            out[family] = result
    return out


def never_served(
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
