"""Metrics: per-entity, per-family deviation from the pre-incident baseline, with change points.

The origin question for a propagating family (latency, errors) is whether an entity's deviation is
its own or inherited: a caller's latency rises when its callee slows down. The tool therefore
credits an entity only with the part of its deviation that its most deviating callee does not
already show. Resource families (CPU, memory) are the entity's own and are taken as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import networkx as nx
import numpy as np

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.core.levels import detail_parts
from rca.telemetry.model import FloatArray, MetricSeries, TimeWindow
from rca.tools.base import ToolContext, ToolResult
from rca.tools.changes import MOVED_Z, changed_by_onset, made_worse, never_served
from rca.tools.changes import entity_scores as change_scores
from rca.tools.faults import EXPLAINS, FAMILIES_OF_KIND, FaultKind, named_symptom
from rca.tools.stats import (
    DOMINANCE,
    KNEE,
    Deviation,
    Direction,
    Family,
    change_point,
    deviation,
    family_of,
    floor_for,
    peak_z,
    same_stream,
    squash,
    supported,
    unrefuted,
)
from rca.tools.stats import WINDOW_QUANTILE as WINDOW_Q
from rca.tools.topology import is_view
from rca.tools.traces import own_latency_z

PROPAGATING = frozenset({Family.LATENCY, Family.ERRORS})
# A success or error rate over fewer requests than this per sample is noise (its binomial standard
# error is too wide to count as evidence), so it is dropped when the entity reports its volume.
MIN_REQUESTS_FOR_RATES = 5.0


@dataclass(frozen=True)
class FamilyFinding:
    """The most deviating series of one family of one entity.

    `anchored` is False when the series reported nothing in the incident window before onset while
    the window reaches back before it: the deviation then rests on the baseline alone, with no local
    reference that the entity was normal just before the symptom appeared.
    """

    family: Family
    metric: str
    instance: str | None
    deviation: Deviation
    onset: float | None  # change point of that series, when one is found
    anchored: bool = True


@dataclass
class MetricProfile:
    """Every family's strongest deviation for one entity."""

    entity: str
    findings: dict[Family, FamilyFinding] = field(default_factory=dict)
    peaks: dict[Family, float] = field(default_factory=dict)  # worst single point beyond the baseline
    # Each family's strongest deviation per instance (None: series of the entity as a whole), for
    # the detail level of a hypothesis: which pod or series carries the entity's fault.
    instances: dict[Family, dict[str | None, FamilyFinding]] = field(default_factory=dict)

    def z(self, family: Family) -> float:
        """The family's z-score (0 when the family is absent or moved the good way)."""
        found = self.findings.get(family)
        return max(0.0, found.deviation.z) if found else 0.0


def _series(ctx: ToolContext, entity: str) -> tuple[list[MetricSeries], list[MetricSeries]]:
    span = TimeWindow(min(ctx.baseline.start, ctx.incident.start), ctx.incident.end)
    everything = ctx.source.metrics(entity, span)
    if ctx.baseline.end <= ctx.incident.start:
        return everything, everything
    # The baseline lies elsewhere (a separate normal recording): fetch it on its own.
    return everything, ctx.source.metrics(entity, ctx.baseline)


def _handed_over(
    incident: list[MetricSeries], baseline_keys: set[tuple[str, str | None]]
) -> list[MetricSeries]:
    """Instance series cut where they start carrying a successor's points.

    When a pod is replaced, collectors may keep reporting the new pod's values under the old pod's name
    as well: from then on the old series is the successor's stream (another version, another level),
    not a change of the old instance, so it is cut where the successor (an instance without baseline
    points) starts. Flat values shared by chance (two pods at 100 % success) prove no shared stream.
    """
    fresh = [
        s
        for s in incident
        if s.instance is not None and (s.name, s.instance) not in baseline_keys and _varies(s.values)
    ]
    out = []
    for series in incident:
        successors = [
            f
            for f in fresh
            if series.instance is not None
            and f.name == series.name
            and f.instance != series.instance
            and same_stream(series, f)
        ]
        if successors:
            cut = min(float(np.nanmin(f.timestamps[np.isfinite(f.values)])) for f in successors)
            series = series.within(TimeWindow(min(float(series.timestamps.min(initial=cut)), cut), cut))
        out.append(series)
    return out


def _stuck_at_zero(*parts: FloatArray) -> bool:
    """Whether every finite value of every part is 0."""
    values = np.concatenate(parts)
    finite = values[np.isfinite(values)]
    return bool(finite.size) and not finite.any()


def _varies(values: FloatArray) -> bool:
    finite = values[np.isfinite(values)]
    return finite.size > 1 and float(np.ptp(finite)) > 0.0


def before_onset(ctx: ToolContext) -> TimeWindow | None:
    """The part of the incident window before the alert fired (None when the window starts at onset)."""
    end = min(ctx.onset, ctx.incident.end)
    return TimeWindow(ctx.incident.start, end) if end > ctx.incident.start else None


# The symptom must deviate this many times the noise knee after onset to time it: an alert metric
# barely above noise does not say when the symptom appeared.
CLEAR = 2.0


def _median_of(values: FloatArray) -> FloatArray:
    """The median of the finite values as a one-point window (empty when there are none)."""
    finite = values[np.isfinite(values)]
    return np.array([np.median(finite)]) if finite.size else finite


def symptom_quiet_before_onset(ctx: ToolContext) -> bool:
    """Whether the alert's own metric was normal before onset (its median there, as for the entities
    judged against it) and clearly deviated from onset on: then the part of
    the incident window before onset is a time when the symptom did not exist yet. False when the alert
    names no metric or its series does not show that (the fault may have begun well before the alert,
    or the alert's metric may not time the symptom at all)."""
    key = "metrics.symptom_quiet"
    cached = ctx.cache.get(key)
    if isinstance(cached, bool):
        return cached
    pre, quiet = before_onset(ctx), False
    kind = family_of(ctx.alert.metric or "")
    if pre is not None and kind is not None:
        after = TimeWindow(pre.end, ctx.incident.end)
        incident_series, baseline_series = _series(ctx, ctx.alert.entity)
        bases = {(s.name, s.instance): s.within(ctx.baseline).values for s in baseline_series}
        timed = [
            (
                deviation(base, _median_of(s.within(pre).values), kind[1], floor_for(kind[0])),
                deviation(base, s.within(after).values, kind[1], floor_for(kind[0])),
            )
            for s in incident_series
            if s.name == ctx.alert.metric and (base := bases.get((s.name, s.instance))) is not None
        ]
        quiet = any(b is not None and a is not None and b.z < KNEE and a.z >= CLEAR * KNEE for b, a in timed)
    ctx.cache[key] = quiet
    return quiet


def _net_of_pre_onset(
    dev: Deviation, series: MetricSeries, ctx: ToolContext, direction: Direction
) -> tuple[Deviation, bool]:
    """The deviation net of the level the series already held before onset, and whether it reported then.

    Temporal precedence: a level the entity already held while the symptom was still normal did not
    cause it (nor is it its effect), so only what the entity added beyond it counts. This needs the
    symptom known to be quiet before onset (an alert may fire long after its fault began). The
    pre-onset median is used, so a fault starting shortly before the alert still counts in full.
    """
    pre = before_onset(ctx)
    if pre is None:
        return dev, True
    values = series.within(pre).values
    values = values[np.isfinite(values)]
    if not values.size:
        return dev, False
    if not symptom_quiet_before_onset(ctx):
        return dev, True
    level = float(np.median(values))
    return replace(dev, z=min(dev.z, dev.excess_over(level, direction))), True


def profile(ctx: ToolContext, entity: str) -> MetricProfile:
    """The entity's metric profile, computed once per investigation."""
    key = f"metrics.profile.{entity}"
    cached = ctx.cache.get(key)
    if isinstance(cached, MetricProfile):
        return cached
    result = MetricProfile(entity)
    incident_series, baseline_series = _series(ctx, entity)
    baselines = {(s.name, s.instance): s.within(ctx.baseline) for s in baseline_series}
    known = {k for k, s in baselines.items() if np.isfinite(s.values).any()}
    volumes = requests_per_sample(incident_series, ctx.incident)
    for series in _handed_over(incident_series, known):
        kind = family_of(series.name)
        base = baselines.get((series.name, series.instance))
        if kind is None or base is None:
            continue
        volume = volumes.get(series.instance, volumes.get(None))
        if kind[0] is Family.LATENCY and too_few_for_quantile(series.name, volume):
            continue
        if kind == (Family.ERRORS, Direction.DOWN) and _stuck_at_zero(base.values, series.values):
            continue  # a success rate of 0 throughout is a collector that does not measure it
        family, direction = kind
        window = series.within(ctx.incident)
        dev = deviation(base.values, window.values, direction, floor_for(family))
        if dev is None:
            continue
        dev, anchored = _net_of_pre_onset(dev, window, ctx, direction)
        peak = peak_z(base.values, window.values, direction, floor_for(family))
        result.peaks[family] = max(result.peaks.get(family, 0.0), peak)
        finding = FamilyFinding(family, series.name, series.instance, dev, None, anchored)
        best = result.findings.get(family)
        if best is None or dev.z > best.deviation.z:
            result.findings[family] = finding
        per_instance = result.instances.setdefault(family, {})
        mine = per_instance.get(series.instance)
        if mine is None or dev.z > mine.deviation.z:
            per_instance[series.instance] = finding
    if Family.ERRORS in result.findings and _low_volume(incident_series, ctx.incident):
        del result.findings[Family.ERRORS]
        result.instances.pop(Family.ERRORS, None)
    ctx.cache[key] = result
    return result


def short_reference_z(ctx: ToolContext, entity: str, family: Family) -> float:
    """For series without a usable baseline (fewer points than a robust spread needs), how far the
    entity moved from its own few points before onset to its points after it, in units of their spread
    (at least the family's relative floor). A lead for ranking only: one or two reference points say too
    little about normal to prove anything, so the metrics tool never reads this."""
    key = f"metrics.short.{entity}"
    cached = ctx.cache.get(key)
    if not isinstance(cached, dict):
        cached = {}
        pre, post = before_onset(ctx), TimeWindow(ctx.onset, max(ctx.onset, ctx.incident.end))
        incident_series, baseline_series = _series(ctx, entity) if pre is not None else ([], [])
        usable = {
            (s.name, s.instance)
            for s in baseline_series
            if np.isfinite(s.within(ctx.baseline).values).sum() >= 3
        }
        for series in incident_series:
            kind = family_of(series.name)
            if kind is None or (series.name, series.instance) in usable or pre is None:
                continue
            ref = series.within(pre).values
            ref = ref[np.isfinite(ref)]
            after = series.within(post).values
            after = after[np.isfinite(after)]
            if not ref.size or not after.size:
                continue
            fam, direction = kind
            level = float(np.median(ref))
            # Flat at zero before onset (no traffic yet), the relative floor is taken on the level after
            # it, so that a series starting from nothing ranks as a large move, not an infinite one.
            scale = max(abs(level), abs(float(np.median(after))))
            spread = max(float(np.ptp(ref)), floor_for(fam) * scale, 1e-9)
            high, low = float(np.quantile(after, WINDOW_Q)), float(np.quantile(after, 1 - WINDOW_Q))
            moved = {Direction.UP: high - level, Direction.DOWN: level - low}.get(
                direction, max(high - level, level - low)
            )
            cached[fam] = max(cached.get(fam, 0.0), max(0.0, moved) / spread)
        ctx.cache[key] = cached
    value = cached.get(family, 0.0)
    return float(value) if isinstance(value, float) else 0.0


def own_short_reference_z(ctx: ToolContext, entity: str, family: Family) -> float:
    """`short_reference_z` net of the strongest callee's, as `own_z` does for propagating families."""
    raw = short_reference_z(ctx, entity, family)
    if family not in PROPAGATING or raw <= 0:
        return raw
    inherited = [short_reference_z(ctx, c, family) for c in ctx.graph.callees(entity) if c != entity]
    return max(0.0, raw - max(inherited, default=0.0))


def requests_per_sample(series: list[MetricSeries], window: TimeWindow) -> dict[str | None, float]:
    """The median number of requests behind one sample in `window`, per instance (None: the entity's
    own series), from its traffic series; a rate per second is multiplied by the sampling interval."""
    out: dict[str | None, float] = {}
    for s in series:
        if family_of(s.name) != (Family.TRAFFIC, Direction.BOTH):
            continue
        inside = s.within(window)
        finite = inside.values[np.isfinite(inside.values)]
        if not finite.size:
            continue
        step = float(np.median(np.diff(s.timestamps))) if s.timestamps.size > 1 else 1.0
        count = float(np.median(finite)) * (step if s.unit.endswith("/s") else 1.0)
        out[s.instance] = max(out.get(s.instance, 0.0), count)
    return out


def _low_volume(series: list[MetricSeries], window: TimeWindow) -> bool:
    """Whether the entity's request volume in `window` is too small for its rates to mean anything."""
    volumes = requests_per_sample(series, window)
    return bool(volumes) and max(volumes.values()) < MIN_REQUESTS_FOR_RATES


_QUANTILE = re.compile(r"p(\d{2,3})$")


def too_few_for_quantile(name: str, requests: float | None) -> bool:
    """Whether a latency quantile (`..._p99`) rests on too few requests per sample to be more than the
    slowest request (p99 needs 100 requests, p90 10): it then follows single slow requests and
    histogram bucket boundaries, so its jumps say nothing about the entity. Unknown volume keeps it."""
    m = _QUANTILE.search(name)
    if m is None or requests is None:
        return False
    digits = m.group(1)
    q = int(digits) / 10.0 ** len(digits)
    return requests * (1.0 - q) < 1.0


def profiles(ctx: ToolContext, entities: Iterable[str]) -> dict[str, MetricProfile]:
    """Profiles of many entities."""
    return {e: profile(ctx, e) for e in entities}


def onset_of(ctx: ToolContext, finding: FamilyFinding, entity: str) -> float | None:
    """When the finding's series changed (ruptures), looked up lazily: only suspects need it."""
    series = [
        s
        for s in ctx.source.metrics(entity, ctx.incident, names=[finding.metric])
        if s.instance == finding.instance
    ]
    if not series:
        return None
    return change_point(series[0].timestamps, series[0].values)


# The share of entities whose own deviation is taken as the incident's noise floor for a family.
PEER_QUANTILE = 0.5


def peer_noise(ctx: ToolContext, family: Family) -> float:
    """How much entities of this incident deviate in `family` anyway (at least 1): a distant or noisy
    baseline makes every entity deviate, and a deviation only means something above that floor."""
    key = f"metrics.noise.{family.value}"
    cached = ctx.cache.get(key)
    if isinstance(cached, float):
        return cached
    zs = [
        own_z(ctx, e, family)[0]
        for e in ctx.graph.names()
        if family in profile(ctx, e).findings and not is_view(ctx.graph, e)  # a view repeats a peer
    ]
    noise = max(1.0, float(np.quantile(zs, PEER_QUANTILE))) if zs else 1.0
    ctx.cache[key] = noise
    return noise


def runner_up(ctx: ToolContext, entity: str, family: Family) -> tuple[float, str | None]:
    """The largest own deviation in `family` of any other component, and who it is. Views (client-side
    records of calls) are no rivals: they measure some component's calls, often this one's."""
    others = [
        (own_z(ctx, e, family)[0], e) for e in ctx.graph.names() if e != entity and not is_view(ctx.graph, e)
    ]
    return max(others, default=(0.0, None))


def own_z(ctx: ToolContext, entity: str, family: Family) -> tuple[float, float, str | None]:
    """The entity's own deviation in `family`: (own z, raw z, the callee that explains the rest)."""
    raw = profile(ctx, entity).z(family)
    if family not in PROPAGATING:
        return raw, raw, None
    callees = [(profile(ctx, c).z(family), c) for c in ctx.graph.callees(entity) if c != entity]
    if not callees:
        return raw, raw, None
    inherited, culprit = max(callees)
    return max(0.0, raw - inherited), raw, (culprit if inherited > 0 else None)


def spans_disown(ctx: ToolContext, entity: str, family: Family) -> float | None:
    """For latency, how far the entity's own span time moved when the investigation's traces measured it
    and it stayed within noise (None otherwise). A server-side latency metric includes the time spent
    waiting on callees; spans separate the entity's own time, so a latency they do not show is not its
    own."""
    if family is not Family.LATENCY:
        return None
    z = own_latency_z(ctx, entity)
    return z if z is not None and z < KNEE else None


# A resource family (CPU, memory) is taken as it is, with no callee to net out: only its lead over
# every other entity separates a fault from the incident's background churn, so it needs a clearer one.
RESOURCE_DOMINANCE = 3.0


def dominance_for(family: Family) -> float:
    """The lead over the runner-up a family needs before its deviation can prove an origin."""
    return DOMINANCE if family in PROPAGATING else RESOURCE_DOMINANCE


def _score(
    own: float, noise: float, lead: float, decisive: bool, burst: bool = False, dominance: float = DOMINANCE
) -> float:
    """Anomaly score of an own deviation relative to the incident's noise floor.

    Only an entity that did not move refutes (a burst of its own errors, or a new version that never
    reported, leaves that unknown). One that moved but no more than its peers, that another entity matches
    (contested), or whose deviation cannot be decisive (see `MetricsTool.run`) stays
    inconclusive: the metrics cannot tell.
    """
    return supported(unrefuted(squash(own / noise), own >= KNEE or burst), decisive, lead, dominance)


def own_cause(ctx: ToolContext, hypothesis: Hypothesis) -> str | None:
    """Another kind of fault at the hypothesis's entity that explains its kind, in words; None if none.

    A change whose new version is demonstrably worse explains whatever it moved; a CPU or memory
    saturation above the incident's noise explains the entity's own latency and errors.
    """
    kind = FaultKind(hypothesis.fault_kind)
    if kind is not FaultKind.BAD_DEPLOY and made_worse(ctx, hypothesis.entity):
        return "its own change made it worse"
    if kind in (FaultKind.LATENCY, FaultKind.ERRORS):
        for family in (Family.CPU, Family.MEMORY):
            z = own_z(ctx, hypothesis.entity, family)[0]
            if z >= KNEE * peer_noise(ctx, family):
                return f"its own {family.value} moved {z:.1f} sigma"
    return None


def error_burst(ctx: ToolContext, entity: str) -> float:
    """The entity's own worst minute of errors beyond anything its baseline showed, net of the worst its
    callees show (a callee's burst reaches its callers too)."""
    mine = profile(ctx, entity).peaks.get(Family.ERRORS, 0.0)
    theirs = [profile(ctx, c).peaks.get(Family.ERRORS, 0.0) for c in ctx.graph.callees(entity) if c != entity]
    return max(0.0, mine - max(theirs, default=0.0))


def changed_downstream(ctx: ToolContext, entity: str) -> list[str]:
    """Services `entity` depends on (directly or not) whose change had started by onset, unless the
    entity's own change demonstrably made it worse: its deviation may be their doing, which its own
    metrics cannot rule out (a caller of a defective release fails with it). An entity's own quiet or
    late change explains nothing, so it does not shield the entity from a changed callee."""
    changed = changed_by_onset(ctx)
    if not changed or made_worse(ctx, entity):
        return []
    g = ctx.digraph
    if entity not in g:
        return []
    return sorted(changed & nx.descendants(g, entity))


def worse_change_elsewhere(ctx: ToolContext, entity: str) -> list[str]:
    """Services connected to `entity` whose change shows more against it than `entity`'s own change does
    (its canary moved, or its new version never served), unless `entity`'s own change made it worse.

    Metrics name where a deviation shows, not why. While a change demonstrably went wrong somewhere in the
    application, a deviation that no change of the entity's own explains as well may be that change's
    doing through paths the call graph does not show (data a caller passes on from it, shared nodes),
    so the entity's metrics cannot prove it the origin."""
    scores = change_scores(ctx)
    if not scores or made_worse(ctx, entity):
        return []
    g = ctx.digraph
    if entity not in g:
        return []
    mine = scores.get(entity, 0.0)
    related = nx.node_connected_component(g.to_undirected(as_view=True), entity)
    return sorted(e for e, z in scores.items() if e != entity and e in related and z >= MOVED_Z and z > mine)


class MetricsTool:
    """Is `entity` the origin of a fault of this kind, by its metrics?"""

    name = "metrics"
    source = Source.METRICS

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Score the hypothesis's families at the entity, net of what its callees already show."""
        what, name = detail_parts(hypothesis)
        if what in ("instance", "metric"):
            return self._detail(ctx, hypothesis, what, name)
        families = FAMILIES_OF_KIND[FaultKind(hypothesis.fault_kind)]
        prof = profile(ctx, hypothesis.entity)
        present = [f for f in families if f in prof.findings]
        if not present:
            # Worded without the kind: the text classifier reads "no errors" as a healthy result, and a
            # series nobody recorded clears nothing.
            return ToolResult(
                summary=f"metrics: unmeasured for this hypothesis: {hypothesis.entity} reports none of "
                "the series it needs in the window",
                measurements={"kind": hypothesis.fault_kind},
                ok=True,
            )
        scored = [(own_z(ctx, hypothesis.entity, f), f) for f in present]
        (own, raw, culprit), family = max(scored, key=lambda item: item[0][0] / peer_noise(ctx, item[1]))
        noise = peer_noise(ctx, family)
        second, rival = runner_up(ctx, hypothesis.entity, family)
        lead = own / second if second > 0 else float("inf")
        upstream_of_change = changed_downstream(ctx, hypothesis.entity)
        upstream_of_change += [
            e for e in worse_change_elsewhere(ctx, hypothesis.entity) if e not in upstream_of_change
        ]
        if upstream_of_change:
            lead = 0.0  # contested by a fresh change below it
        finding = prof.findings[family]
        onset = onset_of(ctx, finding, hypothesis.entity)
        dev = finding.deviation
        # Proof needs a deviation of the entity's own that it held from onset and that accounts for what
        # the alert measured: a view's figures are its caller's record of calls (the fault may sit
        # anywhere behind them); a series that reported nothing before onset has no local reference that
        # it was normal while the symptom was; and a family that explains the alert's only in part (a
        # slow dependency behind an availability alert) is a lead, not proof.
        symptom = named_symptom(ctx.alert.metric)
        partial = symptom is not None and EXPLAINS[symptom].get(family, 0.0) < 1.0
        span_z = spans_disown(ctx, hypothesis.entity, family)
        # A fault-kind claim (a hypothesis below a service) asks which kind is the fault, not whether the
        # entity is an origin: a kind that another kind at the same entity explains is its symptom.
        cause = own_cause(ctx, hypothesis) if hypothesis.parent_id is not None else None
        caveats = [
            text
            for text, applies in (
                (f"{cause}, which explains it", cause is not None),
                ("a client-side view, not a component", is_view(ctx.graph, hypothesis.entity)),
                ("no data before onset", not finding.anchored),
                (f"{family.value} explains a {symptom.value if symptom else ''} alert only in part", partial),
                (f"own span time moved {span_z or 0.0:.1f} sigma", span_z is not None),
            )
            if applies
        ]
        explained = f"; {culprit} shows {raw - own:.1f} of it" if culprit else ""
        # Errors come in bursts: a few failing minutes escape the window quantile, yet an entity that
        # failed as it never did in its baseline did move, so its metrics cannot clear it.
        burst = Family.ERRORS in families and own < KNEE and error_burst(ctx, hypothesis.entity) >= KNEE
        # A rollout whose new version never reported leaves that version unobserved: the metrics show the
        # old version only, so they cannot clear the entity either.
        unseen = own < KNEE and never_served(ctx, hypothesis.entity)
        summary = (
            f"metrics: {hypothesis.entity} {finding.metric} {dev.baseline:.4g} -> {dev.observed:.4g} "
            f"({raw:.1f} sigma, own {own:.1f}{explained}; peers deviate {noise:.1f}"
            + (f"; next {rival} {second:.1f})" if rival else ")")
            + (
                f"; changed below or beside it: {', '.join(upstream_of_change[:3])}"
                if upstream_of_change
                else ""
            )
            + "".join(f"; {text}" for text in caveats)
            + ("; errors burst beyond its baseline in some minutes" if burst else "")
            + ("; its new version has reported nothing since its rollout" if unseen else "")
        )
        measurements: dict[str, float | str] = {
            "family": family.value,
            "metric": finding.metric,
            "z": round(raw, 3),
            "own_z": round(own, 3),
            "peer_noise": round(noise, 3),
            "runner_up_z": round(second, 3),
            "baseline": dev.baseline,
            "observed": dev.observed,
        }
        if onset is not None:
            measurements["onset"] = onset
        return ToolResult(
            summary=summary,
            signals={
                "anomaly_score": round(
                    _score(own, noise, lead, not caveats, burst or unseen, dominance_for(family)), 4
                )
            },
            measurements=measurements,
        )

    def _detail(self, ctx: ToolContext, hypothesis: Hypothesis, what: str, name: str) -> ToolResult:
        """Does this instance (or entity-wide series) carry the entity's deviation of the kind, clearly
        more than the entity's other instances (or series) of those families do?"""
        entity = hypothesis.entity
        prof = profile(ctx, entity)
        found = [
            f
            for family in FAMILIES_OF_KIND[FaultKind(hypothesis.fault_kind)]
            for f in prof.instances.get(family, {}).values()
        ]
        if what == "instance":
            mine = [f for f in found if f.instance == name]
            others = [f for f in found if f.instance not in (name, None)]
        else:
            mine = [f for f in found if f.instance is None and f.metric == name]
            others = [f for f in found if f.instance is None and f.metric != name]
        if not mine:
            return ToolResult(
                summary=f"metrics: unmeasured for this detail: {entity} reports no {hypothesis.fault_kind} "
                f"series for {what} {name}",
                measurements={"kind": hypothesis.fault_kind, "detail": hypothesis.detail},
            )
        best = max(mine, key=lambda f: f.deviation.z)
        z = max(0.0, best.deviation.z)
        rival = max((f.deviation.z for f in others), default=0.0)
        lead = z / rival if rival > 0 else float("inf")
        noise = peer_noise(ctx, best.family)
        score = _score(z, noise, lead, best.anchored, dominance=dominance_for(best.family))
        dev = best.deviation
        summary = (
            f"metrics: {entity} {what} {name}: {best.metric} {dev.baseline:.4g} -> {dev.observed:.4g} "
            f"({z:.1f} sigma; peers deviate {noise:.1f}"
            + (f"; its other {what}s at most {rival:.1f})" if others else f"; the only {what} measured)")
            + ("" if best.anchored else "; no data before onset")
        )
        return ToolResult(
            summary=summary,
            signals={"anomaly_score": round(score, 4)},
            measurements={
                "family": best.family.value,
                "metric": best.metric,
                "detail": hypothesis.detail,
                "z": round(z, 3),
                "rival_z": round(rival, 3),
                "peer_noise": round(noise, 3),
            },
        )
