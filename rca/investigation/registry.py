"""Which tools exist, which modality each needs, and the change citations of an incident."""

from __future__ import annotations

from collections.abc import Iterable

from rca.investigation.seed import METRICS_MODALITY, Modality
from rca.telemetry.model import Modality as DataModality
from rca.tools import changes, logs, traces
from rca.tools.base import Tool
from rca.tools.changes import ChangesTool
from rca.tools.logs import LogsTool
from rca.tools.metrics import MetricsTool
from rca.tools.topology import TopologyTool
from rca.tools.traces import TracesTool

# tool name -> (factory, telemetry it needs: any one of these)
_TOOLS: dict[str, tuple[type, frozenset[DataModality]]] = {
    "metrics": (MetricsTool, frozenset({DataModality.METRICS})),
    "logs": (LogsTool, frozenset({DataModality.LOGS})),
    "traces": (TracesTool, frozenset({DataModality.TRACES})),
    "changes": (ChangesTool, frozenset({DataModality.EVENTS, DataModality.CHANGES})),
    "topology": (TopologyTool, frozenset()),
}
ALL_TOOLS: tuple[str, ...] = tuple(_TOOLS)

# Traces come first: the metrics lane reads their own-time analysis, when there is one, to tell a
# latency of the entity's own from time spent waiting on its callees. Logs weigh double: a log line is
# written by the code that runs it, so a new error template or a broken log sequence sits at its origin,
# where a metric deviation of moderate size shows in many services of a busy incident.
_SEEDING: dict[str, Modality] = {
    "traces": Modality("traces", traces.entity_scores, traces.kind_hint),
    "metrics": METRICS_MODALITY,
    "logs": Modality("logs", logs.entity_scores, logs.kind_hint, weight=2.0),
    "changes": Modality("changes", changes.entity_scores, changes.kind_hint, weight=2.0),
}


def _usable(name: str, available: frozenset[DataModality]) -> bool:
    needs = _TOOLS[name][1]
    return not needs or bool(needs & available)


def tools_for(enabled: Iterable[str], available: frozenset[DataModality]) -> dict[str, Tool]:
    """Instances of the enabled tools whose telemetry the source has, in a stable order."""
    wanted = set(enabled)
    return {name: _TOOLS[name][0]() for name in ALL_TOOLS if name in wanted and _usable(name, available)}


def modalities_for(enabled: Iterable[str], available: frozenset[DataModality]) -> tuple[Modality, ...]:
    """The seeding modalities of the enabled, usable tools."""
    wanted = set(enabled)
    return tuple(m for name, m in _SEEDING.items() if name in wanted and _usable(name, available))
