"""The changes tool: deploys and config changes in the onset window, and whether one made things worse."""

from __future__ import annotations

from rca.core.evidence import Source
from rca.telemetry.model import Modality
from rca.tools.base import Seeding, ToolSpec
from rca.tools.changes import seeding
from rca.tools.changes.tool import ChangesTool
from rca.tools.faults import FaultKind

SPEC = ToolSpec(
    name="changes",
    source=Source.CHANGES,
    make=ChangesTool,
    needs=frozenset({Modality.EVENTS, Modality.CHANGES}),
    # A canary comparison isolates an origin as directly as a controlled experiment: it weighs double.
    seeding=Seeding(seeding.scores, seeding.kind_hint, weight=2.0),
    examines=frozenset({FaultKind.BAD_DEPLOY.value}),
    checks=frozenset({"change"}),
    kinds=seeding.kinds,
    details=seeding.details,
    record=seeding.record,
)
