"""The dependency graph as the tools and the investigation query it: networkx form, call paths and
observation points.

Shared by every layer above the telemetry model that walks the graph (the tools' origin attribution,
seeding's blame, the conclusion's frontier and propagation path), so none of them needs another's code.
"""

from __future__ import annotations

import networkx as nx

from rca.telemetry.model import DependencyGraph

# Entity kinds that are observation points rather than components: a `remote` node is a caller's
# client-side record of calls to an endpoint it does not see into (X-Ray's inferred nodes, OpenTelemetry
# CLIENT spans to uninstrumented peers), a `client` node the record of calls arriving from outside.
# What they measure is real, but it is someone else's measurement of a call, not the entity's own.
VIEW_KINDS = frozenset({"remote", "client"})


def is_view(graph: DependencyGraph, name: str) -> bool:
    """Whether `name` is an observation point (a client-side view of calls), not a component."""
    return any(e.name == name and e.kind in VIEW_KINDS for e in graph.entities)


def as_digraph(graph: DependencyGraph) -> nx.DiGraph:
    """The dependency graph as a networkx DiGraph (caller -> callee, attribute `weight`)."""
    g = nx.DiGraph()
    g.add_nodes_from(graph.names())
    for edge in graph.edges:
        if edge.caller != edge.callee:
            g.add_edge(edge.caller, edge.callee, weight=edge.weight)
    return g


def call_path(graph: DependencyGraph, caller: str, callee: str) -> list[str] | None:
    """The shortest chain of calls from `caller` down to `callee` (both included), if any."""
    g = as_digraph(graph)
    if caller not in g or callee not in g:
        return None
    try:
        return list(nx.shortest_path(g, caller, callee))
    except nx.NetworkXNoPath:
        return None


def call_paths(graph: DependencyGraph, caller: str, callee: str) -> list[list[str]]:
    """Every shortest chain of calls from `caller` down to `callee` (both included), in sorted order."""
    g = as_digraph(graph)
    if caller not in g or callee not in g or not nx.has_path(g, caller, callee):
        return []
    return sorted(nx.all_shortest_paths(g, caller, callee))
