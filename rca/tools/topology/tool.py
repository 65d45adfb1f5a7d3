"""Topology: callers, callees and paths between entities, from the dependency graph.

The graph says what can propagate to what; it can never say that something is broken, so this tool
returns no decisive signal and its evidence is always inconclusive. It is recorded all the same:
the path it names is part of the audit trail.
"""

from __future__ import annotations

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.tools.base import ToolContext, ToolResult
from rca.tools.graph import call_path


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
