"""Seeding: anomaly scores per entity and personalized-PageRank blame over the dependency graph.

Each usable tool's `Seeding` scores how much of an entity's deviation is its own (not inherited from a
callee). The scores are compressed with log1p so that one extreme metric cannot drown the others
while the order is kept, then summed across tools. A personalized PageRank, started from the
alerting symptom and the anomalous entities and walking from callers to callees with weights that
follow the callees' anomaly, spreads blame along the paths a fault can take to reach the symptom;
the suspect score is the entity's own anomaly scaled by that blame.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import networkx as nx

from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import TelemetryError
from rca.tools.base import Seeding, ToolContext
from rca.tools.faults import FaultKind
from rca.tools.graph import is_view

log = logging.getLogger(__name__)

PAGERANK_ALPHA = 0.85
BACKFLOW = 0.1  # walkers may step back to a caller, so blame does not pool in healthy leaves
BLAME_SHARE = 0.5  # how much of the suspect score the PageRank blame may move
# A view (a client-side record of calls) shows a deviation of whatever component serves those calls;
# it stays a lead, at this share of its score, so that the component it may stand for ranks first.
VIEW_SHARE = 0.5


@dataclass(frozen=True)
class Suspect:
    """A ranked suspect with the sub-scores that ranked it."""

    entity: str
    score: float
    fault_kind: FaultKind
    subscores: Mapping[str, float] = field(default_factory=dict)


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
    seedings: Mapping[str, Seeding],
    priors: Mapping[str, float] | None = None,
    use_blame: bool = True,
) -> list[Suspect]:
    """Every entity of the graph ranked by suspicion (highest first), with its likely fault kind.

    `seedings` are the usable tools' contributions by tool name, in the order they run
    (`rca.tools.registry.seedings`). `priors` (recall of similar past incidents) may nudge a score up;
    they are never evidence.
    """
    per_tool: dict[str, Mapping[str, float]] = {}
    failed: set[str] = set()
    for name, seeding in seedings.items():
        try:
            per_tool[name] = seeding.scores(ctx)
        except TelemetryError as exc:
            # A backend down while seeding: rank on the other tools; the tools that ask it later
            # record its failure as inconclusive evidence.
            log.warning("seeding without %s: %s", name, exc)
            per_tool[name] = {}
            failed.add(name)
    entities = ctx.graph.names()
    anomaly = {
        e: sum(seedings[name].weighed(s.get(e, 0.0)) for name, s in per_tool.items()) for e in entities
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
            (seeding.weighed(per_tool[name].get(e, 0.0)), _kind_hint(ctx, seeding, e))
            for name, seeding in seedings.items()
            if name not in failed
        ]
        hinted = [(s, k) for s, k in kinds if k is not None]
        kind = max(hinted, key=lambda x: x[0])[1] if hinted else FaultKind.LATENCY
        subscores = {f"{name}_z": round(s.get(e, 0.0), 3) for name, s in per_tool.items()}
        subscores.update(
            anomaly=round(anomaly[e], 4),
            pagerank=round(pr.get(e, 0.0), 4),
            prior=round(prior.get(e, 0.0), 4),
            score=round(score, 4),
        )
        suspects.append(Suspect(e, score, kind, subscores))
    suspects.sort(key=lambda s: (-s.score, s.entity))
    return suspects


def _kind_hint(ctx: ToolContext, seeding: Seeding, entity: str) -> FaultKind | None:
    """The tool's kind hint for `entity`, or none when its backend fails."""
    try:
        return seeding.kind_hint(ctx, entity)
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
