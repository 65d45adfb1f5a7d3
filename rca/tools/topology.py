"""Topology: callers, callees and paths between entities, from the dependency graph.

The graph says what can propagate to what; it can never say that something is broken, so this tool
returns no decisive signal and its evidence is always inconclusive. It is recorded all the same:
the path it names is part of the audit trail.
"""

from __future__ import annotations

import networkx as nx

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import DependencyGraph
from rca.tools.base import ToolContext, ToolResult

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


class TopologyTool:
    """How does `entity` relate to the alerting symptom?"""

    name = "topology"
    source = Source.TOPOLOGY

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Callers, callees and the call path from the symptom to the entity."""
        entity = hypothesis.entity
        path = call_path(ctx.graph, ctx.alert.entity, entity)
        route = " -> ".join(path) if path else f"no call path from {ctx.alert.entity}"
        callers, callees = ctx.graph.callers(entity), ctx.graph.callees(entity)
        return ToolResult(
            summary=f"topology: {entity} has {len(callers)} callers, {len(callees)} callees; {route}",
            measurements={
                "callers": len(callers),
                "callees": len(callees),
                "path_length": len(path) - 1 if path else -1,
            },
        )
