"""Dependency graphs derived from telemetry when no topology is given.

Generic: used by recorded loaders (Nezha TrainTicket) and by live sources alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rca.telemetry.model import DependencyGraph, Edge, Entity, Span


def graph_from_spans(spans: Iterable[Span], extra_entities: Iterable[str] = ()) -> DependencyGraph:
    """Build caller -> callee edges from parent/child spans.

    A parent span's service calls the child span's service when the two differ (this covers the
    CLIENT span -> child SERVER span case without requiring span kinds, which some datasets lack).
    Edge weights are call counts. Spans whose parent is not among `spans` contribute an entity but no
    edge. `extra_entities` adds services known from other telemetry (e.g. metrics) as nodes.
    """
    span_list = list(spans)
    owner = {s.span_id: s.entity for s in span_list}
    calls: Counter[tuple[str, str]] = Counter()
    names: set[str] = set(extra_entities)
    for s in span_list:
        names.add(s.entity)
        if s.parent_span_id is None:
            continue
        parent = owner.get(s.parent_span_id)
        if parent is not None and parent != s.entity:
            calls[(parent, s.entity)] += 1
    edges = tuple(Edge(caller, callee, float(n)) for (caller, callee), n in sorted(calls.items()))
    return DependencyGraph(entities=tuple(Entity(n) for n in sorted(names)), edges=edges)


def graph_from_edges(
    edges: Iterable[tuple[str, str, float]],
    extra_entities: Iterable[str] = (),
    kinds: dict[str, str] | None = None,
) -> DependencyGraph:
    """A graph from (caller, callee, weight) triples; repeated pairs add their weights."""
    weights: dict[tuple[str, str], float] = {}
    names: set[str] = set(extra_entities)
    for caller, callee, weight in edges:
        names.update((caller, callee))
        if caller != callee:
            weights[(caller, callee)] = weights.get((caller, callee), 0.0) + weight
    kinds = kinds or {}
    return DependencyGraph(
        entities=tuple(Entity(n, kind=kinds.get(n, "service")) for n in sorted(names)),
        edges=tuple(Edge(a, b, float(w)) for (a, b), w in sorted(weights.items())),
    )
