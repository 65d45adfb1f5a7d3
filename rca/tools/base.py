"""The evidence tools' common ground: the investigation context, tool results, and the
EvidenceCapturingTool decorator that turns every tool call into provenance-tagged evidence.

A tool answers one question about one hypothesis ("is `entity` the origin of a `fault_kind`
fault?") and returns two kinds of numbers: `signals`, the decisive ones the core's verdict
classifier reads (keys from `rca.core.verdict.SIGNAL_KEYS`), and `measurements`, what it saw, kept
with the evidence for the reader but never classified (so a descriptive number can never be
mistaken for a fault signal).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import networkx as nx

from rca.core.evidence import Evidence, EvidenceSink, SignalValue, Source, Verdict
from rca.core.hypotheses import Hypothesis
from rca.core.redact import redact
from rca.core.verdict import ToolOutput, classify
from rca.telemetry.model import Alert, DependencyGraph, TelemetryError, TelemetrySource, TimeWindow

log = logging.getLogger(__name__)

MEASUREMENT_PREFIX = "m."
FAILED = "failed"  # measurement of a call whose backend failed


@dataclass
class ToolContext:
    """What every tool of one investigation shares: the source, the alert, the windows, a cache."""

    source: TelemetrySource
    alert: Alert
    incident: TimeWindow  # where the fault is looked for
    baseline: TimeWindow  # normal behaviour to compare with
    graph: DependencyGraph
    cache: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def digraph(self) -> nx.DiGraph:
        """The dependency graph as networkx, built once per investigation (read-only by convention)."""
        from rca.tools.topology import as_digraph  # imported here: topology imports this module

        return as_digraph(self.graph)

    @property
    def onset(self) -> float:
        """The onset hint: the alert's firing time."""
        return self.alert.fired_at


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer: a one-line summary, decisive signals and descriptive measurements."""

    summary: str
    signals: Mapping[str, SignalValue] = field(default_factory=dict)
    measurements: Mapping[str, SignalValue] = field(default_factory=dict)
    ok: bool = True
    error: str | None = None


class Tool(Protocol):
    """A deterministic analyzer over telemetry, asked about one hypothesis."""

    name: str
    source: Source

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Analyse the telemetry for `hypothesis`; raise TelemetryError when a backend fails."""
        ...


@dataclass(frozen=True)
class Capture:
    """One captured call: the tool's result and the evidence recorded for it."""

    result: ToolResult
    evidence: Evidence


class EvidenceCapturingTool:
    """Wraps a tool: classifies its result, tags its real source, redacts and bounds its summary and
    records the evidence for the hypothesis the call was made for.

    Capture is a side channel: a failing backend becomes an inconclusive record, never an exception
    that stops the investigation.
    """

    def __init__(self, tool: Tool, sink: EvidenceSink) -> None:
        self.tool = tool
        self.sink = sink

    @property
    def name(self) -> str:
        """The wrapped tool's name."""
        return self.tool.name

    def __call__(self, ctx: ToolContext, hypothesis: Hypothesis) -> Capture:
        """Run the tool for `hypothesis` and record what it proved."""
        try:
            result = self.tool.run(ctx, hypothesis)
        except TelemetryError as exc:
            # The `failed` measurement marks the record as a tool failure (recovery guidance reads it).
            result = ToolResult(
                summary=f"{self.tool.name} failed: {exc}",
                measurements={FAILED: True},
                ok=False,
                error=str(exc),
            )
        verdict = classify(
            ToolOutput(
                text=result.summary,
                signals=result.signals,
                ok=result.ok,
                error=result.error,
                onset_start=ctx.incident.start,
                onset_end=ctx.incident.end,
            )
        )
        evidence = Evidence(
            tool=self.tool.name,
            hypothesis_id=hypothesis.id,
            summary=redact(result.summary),
            verdict=Verdict(verdict),
            source=self.tool.source,
            # Data time, not wall clock: the same case gives byte-identical evidence on every run.
            observed_at=ctx.incident.end,
            signals={**result.signals, **{MEASUREMENT_PREFIX + k: v for k, v in result.measurements.items()}},
        )
        self.sink.record(evidence)
        log.debug("%s on %s -> %s", self.tool.name, hypothesis.id, evidence.verdict)
        return Capture(result, evidence)
