"""The metrics tool: per-entity, per-family deviation from the baseline, net of what callees show."""

from __future__ import annotations

from rca.core.evidence import Source
from rca.telemetry.model import Modality
from rca.tools.base import Seeding, ToolSpec
from rca.tools.faults import FaultKind
from rca.tools.metrics import seeding
from rca.tools.metrics.tool import MetricsTool

SPEC = ToolSpec(
    name="metrics",
    source=Source.METRICS,
    make=MetricsTool,
    needs=frozenset({Modality.METRICS}),
    # Seeding reads the spans' own time (a latency the entity's own spans do not show is not its own).
    seeding=Seeding(seeding.scores, seeding.kind_hint, reads=("traces",)),
    examines=frozenset(k.value for k in FaultKind if k is not FaultKind.BAD_DEPLOY),
    checks=frozenset({"instance", "metric"}),
    kinds=seeding.kinds,
    details=seeding.details,
    record=seeding.record,
)
