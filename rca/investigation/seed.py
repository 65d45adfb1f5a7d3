"""Seeding: anomaly scores per entity and personalized-PageRank blame over the dependency graph.

Each enabled modality scores how much of an entity's deviation is its own (not inherited from a
callee). The scores are compressed with log1p so that one extreme metric cannot drown the others
while the order is kept, then summed across modalities. A personalized PageRank, started from the
alerting symptom and the anomalous entities and walking from callers to callees with weights that
follow the callees' anomaly, spreads blame along the paths a fault can take to reach the symptom;
the suspect score is the entity's own anomaly scaled by that blame.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import networkx as nx

from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import TelemetryError
from rca.tools import metrics
from rca.tools.base import ToolContext
from rca.tools.faults import EXPLAINS, KIND_OF_FAMILY, FaultKind, symptom_family
from rca.tools.stats import KNEE
from rca.tools.topology import is_view

log = logging.getLogger(__name__)

PAGERANK_ALPHA = 0.85
BACKFLOW = 0.1  # walkers may step back to a caller, so blame does not pool in healthy leaves
BLAME_SHARE = 0.5  # how much of the suspect score the PageRank blame may move
# A view (a client-side record of calls) shows a deviation of whatever component serves those calls;
# it stays a lead, at this share of its score, so that the component it may stand for ranks first.
VIEW_SHARE = 0.5


ScoreFn = Callable[[ToolContext], Mapping[str, float]]
KindFn = Callable[[ToolContext, str], "FaultKind | None"]


@dataclass(frozen=True)
class Modality:
    """One modality's contribution to seeding: per-entity own-origin scores and a kind hint.

    `weight` says how directly the modality isolates an origin: a canary comparison of a service's
    new and old versions under the same traffic is a controlled experiment, where a before/after
    deviation is confounded by everything that propagates.
    """

    name: str
    scores: ScoreFn
    kind_hint: KindFn
    weight: float = 1.0


@dataclass(frozen=True)
class Suspect:
    """A ranked suspect with the sub-scores that ranked it."""

    entity: str
    score: float
    fault_kind: FaultKind
    subscores: Mapping[str, float] = field(default_factory=dict)


def compress(z: float) -> float:
    """log1p of the z-score above the noise knee: monotone, bounded growth."""
    if not math.isfinite(z):
        z = 1e6 if z > 0 else 0.0
    return math.log1p(max(0.0, z - KNEE))


def metric_scores(ctx: ToolContext) -> dict[str, float]:
    """Own-origin metric score per entity, weighted by how well each family explains the symptom.

    Series too short of baseline for a robust deviation are scored from their few points before onset
    (`metrics.short_reference_z`): seeding ranks, it never proves, so a thin reference may rank."""
    weights = EXPLAINS[symptom_family(ctx.alert.metric)]
    return {
        e: max(
            (
                w * max(metrics.own_z(ctx, e, f)[0], metrics.own_short_reference_z(ctx, e, f))
                for f, w in weights.items()
                if metrics.spans_disown(ctx, e, f) is None  # a latency its spans do not show
            ),
            default=0.0,
        )
        for e in ctx.graph.names()
    }


def metric_kind(ctx: ToolContext, entity: str) -> FaultKind | None:
    """The kind named by the family that moved most at the entity itself (its own share), weighted as
    in `metric_scores` by how well it explains the alert: behind an availability alert, a service whose
    errors and latency both rose is first an errors suspect."""
    weights = EXPLAINS[symptom_family(ctx.alert.metric)]
    moved = [(metrics.own_z(ctx, entity, f)[0], weights.get(f, 0.0), f) for f in KIND_OF_FAMILY]
    over = [(z * w, f) for z, w, f in moved if z > KNEE]
    if not over:
        return None
    return KIND_OF_FAMILY[max(over, key=lambda x: (x[0], x[1].value))[1]]


METRICS_MODALITY = Modality("metrics", metric_scores, metric_kind)


def blame(ctx: ToolContext, anomaly: Mapping[str, float]) -> dict[str, float]:
    """Personalized PageRank from the symptom and the anomalous entities, callers -> callees."""
    g = ctx.digraph
    walk = nx.DiGraph()
    walk.add_nodes_from(g.nodes)
    for caller, callee in g.edges:
        walk.add_edge(caller, callee, weight=1.0 + anomaly.get(callee, 0.0))
        if not walk.has_edge(callee, caller):
            walk.add_edge(callee, caller, weight=BACKFLOW * (1.0 + anomaly.get(caller, 0.0)))
    start = {n: anomaly.get(n, 0.0) for n in walk.nodes}
    if ctx.alert.entity in start:
        start[ctx.alert.entity] += 1.0 + max(start.values(), default=0.0)
    if not walk.nodes or sum(start.values()) <= 0:
        return dict.fromkeys(walk.nodes, 0.0)
    ranks: dict[str, float] = nx.pagerank(walk, alpha=PAGERANK_ALPHA, personalization=start, weight="weight")
    top = max(ranks.values(), default=0.0) or 1.0
    return {n: r / top for n, r in ranks.items()}


def seed(
    ctx: ToolContext,
    modalities: tuple[Modality, ...],
    priors: Mapping[str, float] | None = None,
    use_blame: bool = True,
) -> list[Suspect]:
    """Every entity of the graph ranked by suspicion (highest first), with its likely fault kind.

    `priors` (recall of similar past incidents) may nudge a score up; they are never evidence.
    """
    per_modality: dict[str, Mapping[str, float]] = {}
    failed: set[str] = set()
    for m in modalities:
        try:
            per_modality[m.name] = m.scores(ctx)
        except TelemetryError as exc:
            # A backend down while seeding: rank on the other modalities; the tools that ask it later
            # record its failure as inconclusive evidence.
            log.warning("seeding without %s: %s", m.name, exc)
            per_modality[m.name] = {}
            failed.add(m.name)
    entities = ctx.graph.names()
    weights = {m.name: m.weight for m in modalities}
    anomaly = {
        e: sum(weights[name] * compress(s.get(e, 0.0)) for name, s in per_modality.items()) for e in entities
    }
    pr = blame(ctx, anomaly) if use_blame else dict.fromkeys(entities, 1.0)
    prior = priors or {}
    suspects = []
    for e in entities:
        score = anomaly[e] * ((1 - BLAME_SHARE) + BLAME_SHARE * pr.get(e, 0.0))
        if is_view(ctx.graph, e):
            score *= VIEW_SHARE
        score *= 1.0 + 0.1 * min(1.0, max(0.0, prior.get(e, 0.0)))
        kinds = [
            (m.weight * compress(per_modality[m.name].get(e, 0.0)), _kind_hint(ctx, m, e))
            for m in modalities
            if m.name not in failed
        ]
        hinted = [(s, k) for s, k in kinds if k is not None]
        kind = max(hinted, key=lambda x: x[0])[1] if hinted else FaultKind.LATENCY
        subscores = {f"{name}_z": round(s.get(e, 0.0), 3) for name, s in per_modality.items()}
        subscores.update(
            anomaly=round(anomaly[e], 4),
            pagerank=round(pr.get(e, 0.0), 4),
            prior=round(prior.get(e, 0.0), 4),
            score=round(score, 4),
        )
        suspects.append(Suspect(e, score, kind, subscores))
    suspects.sort(key=lambda s: (-s.score, s.entity))
    return suspects


def _kind_hint(ctx: ToolContext, modality: Modality, entity: str) -> FaultKind | None:
    """The modality's kind hint for `entity`, or none when its backend fails."""
    try:
        return modality.kind_hint(ctx, entity)
    except TelemetryError:
        return None


def hypothesis_for(suspect: Suspect, rank: int) -> Hypothesis:
    """The service-level hypothesis a suspect seeds."""
    return Hypothesis(
        id=f"h{rank:02d}-{suspect.entity}-{suspect.fault_kind.value}",
        entity=suspect.entity,
        fault_kind=suspect.fault_kind.value,
        prior=round(suspect.score, 6),
    )
