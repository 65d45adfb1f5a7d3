"""The topology tool: how an entity relates to the alerting symptom, from the dependency graph."""

from __future__ import annotations

from rca.core.evidence import Source
from rca.tools.base import ToolSpec
from rca.tools.topology.tool import TopologyTool

SPEC = ToolSpec(name="topology", source=Source.TOPOLOGY, make=TopologyTool)
