"""The traces tool: a service's own span time, own errors and call structure, net of its callees'."""

from __future__ import annotations

from rca.core.evidence import Source
from rca.telemetry.model import Modality
from rca.tools.base import Seeding, ToolSpec
from rca.tools.faults import FaultKind
from rca.tools.traces import seeding
from rca.tools.traces.tool import TracesTool

SPEC = ToolSpec(
    name="traces",
    source=Source.TRACES,
    make=TracesTool,
    needs=frozenset({Modality.TRACES}),
    seeding=Seeding(seeding.scores, seeding.kind_hint),
    examines=frozenset(k.value for k in FaultKind if k is not FaultKind.BAD_DEPLOY),
)
