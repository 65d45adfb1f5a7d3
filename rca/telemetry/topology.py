"""Dependency graphs derived from telemetry when no topology is given.

Generic: used by recorded loaders (Nezha TrainTicket) and by live sources alike.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from rca.telemetry.model import DependencyGraph, Edge, Entity, Span


def graph_from_spans(spans: Iterable[Span], extra_entities: Iterable[str] = ()) -> DependencyGraph:
    """Build caller -> callee edges from parent/child spans (`graph_from_span_table` over their ids)."""
    span_list = list(spans)
    table = pd.DataFrame(
        {
            "span_id": [s.span_id for s in span_list],
            "parent_span_id": [s.parent_span_id for s in span_list],
            "entity": [s.entity for s in span_list],
        },
        dtype=object,
    )
    return graph_from_span_table(table, extra_entities)


def graph_from_span_table(table: pd.DataFrame, extra_entities: Iterable[str] = ()) -> DependencyGraph:
    """Build caller -> callee edges from parent/child spans, one row each (`span_id`, `parent_span_id`
    (None for a root), `entity`): vectorised, as a recorded case holds a few hundred thousand spans.

    A parent span's service calls the child span's service when the two differ (this covers the
    CLIENT span -> child SERVER span case without requiring span kinds, which some datasets lack).
    Edge weights are call counts. Spans whose parent is not among the rows contribute an entity but no
    edge (a span id given twice belongs to its last row). `extra_entities` adds services known from
    other telemetry (e.g. metrics) as nodes.
    """
    owner = table.drop_duplicates("span_id", keep="last").set_index("span_id")["entity"]
    parent = table["parent_span_id"].map(owner)
    calls = parent.notna() & (parent != table["entity"])
    counts = table.loc[calls, "entity"].groupby(parent[calls]).value_counts()
    pairs = zip(
        counts.index.get_level_values(0), counts.index.get_level_values(1), counts.to_numpy(), strict=True
    )
    edges = tuple(Edge(str(caller), str(callee), float(n)) for caller, callee, n in sorted(pairs))
    names = {*extra_entities, *(str(e) for e in table["entity"].unique())}
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
