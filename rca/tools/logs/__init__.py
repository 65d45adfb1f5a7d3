"""The logs tool: broken statement pairs, error bursts and template shifts, net of blame."""

from __future__ import annotations

from rca.core.evidence import Source
from rca.telemetry.model import Modality
from rca.tools.base import Seeding, ToolSpec
from rca.tools.logs import seeding
from rca.tools.logs.tool import LogsTool

SPEC = ToolSpec(
    name="logs",
    source=Source.LOGS,
    make=LogsTool,
    needs=frozenset({Modality.LOGS}),
    # A log line is written by the code that runs it, so a new error template or a broken log sequence
    # sits at its origin, where a metric deviation of moderate size shows in many services of a busy
    # incident: logs weigh double.
    seeding=Seeding(seeding.scores, seeding.kind_hint, weight=2.0),
)
