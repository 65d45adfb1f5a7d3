"""Metrics: per-entity, per-family deviation from the pre-incident baseline, with change points.

The origin question for a propagating family (latency, errors) is whether an entity's deviation is
its own or inherited: a caller's latency rises when its callee slows down. The tool therefore
credits an entity only with the part of its deviation that its most deviating callee does not
already show. Resource families (CPU, memory) are the entity's own and are taken as they are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import MetricSeries, TimeWindow
from rca.tools.base import ToolContext, ToolResult
from rca.tools.changes import changes_in_window
from rca.tools.faults import FAMILIES_OF_KIND, FaultKind
from rca.tools.stats import (
    Deviation,
    Direction,
    Family,
    change_point,
    deviation,
    family_of,
    floor_for,
    squash,
)
from rca.tools.topology import as_digraph

PROPAGATING = frozenset({Family.LATENCY, Family.ERRORS})
KNEE = 3.0  # robust z-scores up to this are noise
# A success or error rate over fewer requests than this per sample is noise (its binomial standard
# error is too wide to count as evidence), so it is dropped when the entity reports its volume.
MIN_REQUESTS_FOR_RATES = 5.0


@dataclass(frozen=True)
class FamilyFinding:
    """The most deviating series of one family of one entity."""

    family: Family
    metric: str
    instance: str | None
    deviation: Deviation
    onset: float | None  # change point of that series, when one is found


@dataclass
class MetricProfile:
    """Every family's strongest deviation for one entity."""

    entity: str
    findings: dict[Family, FamilyFinding] = field(default_factory=dict)

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


def profile(ctx: ToolContext, entity: str) -> MetricProfile:
    """The entity's metric profile, computed once per investigation."""
    key = f"metrics.profile.{entity}"
    cached = ctx.cache.get(key)
    if isinstance(cached, MetricProfile):
        return cached
    result = MetricProfile(entity)
    incident_series, baseline_series = _series(ctx, entity)
    baselines = {(s.name, s.instance): s.within(ctx.baseline) for s in baseline_series}
    for series in incident_series:
        kind = family_of(series.name)
        base = baselines.get((series.name, series.instance))
        if kind is None or base is None:
            continue
        family, direction = kind
        window = series.within(ctx.incident)
        dev = deviation(base.values, window.values, direction, floor_for(family))
        if dev is None:
            continue
        best = result.findings.get(family)
        if best is None or dev.z > best.deviation.z:
            result.findings[family] = FamilyFinding(family, series.name, series.instance, dev, None)
    if Family.ERRORS in result.findings and _low_volume(incident_series, ctx.incident):
        del result.findings[Family.ERRORS]
    ctx.cache[key] = result
    return result


def _low_volume(series: list[MetricSeries], window: TimeWindow) -> bool:
    """Whether the entity's request volume in `window` is too small for its rates to mean anything."""
    volumes = [
        s.within(window).values for s in series if family_of(s.name) == (Family.TRAFFIC, Direction.BOTH)
    ]
    finite = [v[np.isfinite(v)] for v in volumes if v.size]
    if not finite or not any(v.size for v in finite):
        return False
    return max(float(np.median(v)) for v in finite if v.size) < MIN_REQUESTS_FOR_RATES


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
# Support needs the suspect's own deviation to lead every other entity's by this factor: when two
# services deviate alike and neither explains the other, the metrics cannot say which is the origin.
DOMINANCE = 1.5


def peer_noise(ctx: ToolContext, family: Family) -> float:
    """How much entities of this incident deviate in `family` anyway (at least 1): a distant or noisy
    baseline makes every entity deviate, and a deviation only means something above that floor."""
    key = f"metrics.noise.{family.value}"
    cached = ctx.cache.get(key)
    if isinstance(cached, float):
        return cached
    zs = [own_z(ctx, e, family)[0] for e in ctx.graph.names() if family in profile(ctx, e).findings]
    noise = max(1.0, float(np.quantile(zs, PEER_QUANTILE))) if zs else 1.0
    ctx.cache[key] = noise
    return noise


def runner_up(ctx: ToolContext, entity: str, family: Family) -> tuple[float, str | None]:
    """The largest own deviation in `family` of any other entity, and who it is."""
    others = [(own_z(ctx, e, family)[0], e) for e in ctx.graph.names() if e != entity]
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


# The classifier supports from 0.8 and refutes up to 0.2; these keep a score between the two.
CONTESTED = 0.79
UNREMARKABLE = 0.21


def _score(own: float, noise: float, lead: float) -> float:
    """Anomaly score of an own deviation relative to the incident's noise floor.

    Only an entity that did not move refutes. One that moved but no more than its peers, or that
    another entity matches (contested), stays inconclusive: the metrics cannot tell.
    """
    score = squash(own / noise)
    if own >= KNEE:
        score = max(score, UNREMARKABLE)
    return min(score, CONTESTED) if lead < DOMINANCE else score


def changed_downstream(ctx: ToolContext, entity: str) -> list[str]:
    """Services `entity` depends on (directly or not) that changed in the onset window, when the entity
    itself did not: its deviation may be their doing, which its own metrics cannot rule out."""
    changed = {e.entity for e in changes_in_window(ctx)}
    if not changed or entity in changed:
        return []
    g = as_digraph(ctx.graph)
    if entity not in g:
        return []
    return sorted(changed & nx.descendants(g, entity))


class MetricsTool:
    """Is `entity` the origin of a fault of this kind, by its metrics?"""

    name = "metrics"
    source = Source.METRICS

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Score the hypothesis's families at the entity, net of what its callees already show."""
        families = FAMILIES_OF_KIND[FaultKind(hypothesis.fault_kind)]
        prof = profile(ctx, hypothesis.entity)
        present = [f for f in families if f in prof.findings]
        if not present:
            return ToolResult(
                summary=f"metrics: no {hypothesis.fault_kind} series for {hypothesis.entity} in the window",
                ok=True,
            )
        scored = [(own_z(ctx, hypothesis.entity, f), f) for f in present]
        (own, raw, culprit), family = max(scored, key=lambda item: item[0][0] / peer_noise(ctx, item[1]))
        noise = peer_noise(ctx, family)
        second, rival = runner_up(ctx, hypothesis.entity, family)
        lead = own / second if second > 0 else float("inf")
        upstream_of_change = changed_downstream(ctx, hypothesis.entity)
        if upstream_of_change:
            lead = 0.0  # contested by a fresh change below it
        finding = prof.findings[family]
        onset = onset_of(ctx, finding, hypothesis.entity)
        dev = finding.deviation
        explained = f"; {culprit} shows {raw - own:.1f} of it" if culprit else ""
        summary = (
            f"metrics: {hypothesis.entity} {finding.metric} {dev.baseline:.4g} -> {dev.observed:.4g} "
            f"({raw:.1f} sigma, own {own:.1f}{explained}; peers deviate {noise:.1f}"
            + (f"; next {rival} {second:.1f})" if rival else ")")
            + (f"; changed below it: {', '.join(upstream_of_change[:3])}" if upstream_of_change else "")
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
            signals={"anomaly_score": round(_score(own, noise, lead), 4)},
            measurements=measurements,
        )


def top_families(prof: MetricProfile, minimum_z: float = 3.0) -> list[Family]:
    """Families that moved, strongest first."""
    moved = [(prof.z(f), f) for f in prof.findings if prof.z(f) >= minimum_z]
    return [f for _, f in sorted(moved, key=lambda item: (-item[0], item[1].value))]
