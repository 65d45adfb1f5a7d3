"""The evidence tools' common ground: the investigation context, tool results, the
EvidenceCapturingTool decorator that turns every tool call into provenance-tagged evidence, and the
`ToolSpec` each tool declares itself with (see `rca.tools.registry`).

A tool answers one question about one hypothesis ("is `entity` the origin of a `fault_kind`
fault?") and returns two kinds of numbers: `signals`, the decisive ones the core's verdict
classifier reads (keys from `rca.core.verdict.SIGNAL_KEYS`), and `measurements`, what it saw, kept
with the evidence for the reader but never classified (so a descriptive number can never be
mistaken for a fault signal).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import networkx as nx

from rca.core.evidence import STRUCTURAL_SOURCES, Evidence, EvidenceSink, SignalValue, Source, Verdict
from rca.core.hypotheses import Hypothesis
from rca.core.redact import redact
from rca.core.verdict import ToolOutput, classify
from rca.telemetry.model import Alert, DependencyGraph, Modality, TelemetryError, TelemetrySource, TimeWindow
from rca.tools.facts import RunRecord
from rca.tools.faults import FaultKind
from rca.tools.graph import as_digraph
from rca.tools.stats import KNEE, UNREMARKABLE

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
    record: RunRecord = field(default_factory=RunRecord)  # the facts the tools record for later stages

    @cached_property
    def digraph(self) -> nx.DiGraph:
        """The dependency graph as networkx, built once per investigation (read-only by convention)."""
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

    @property
    def anomaly_score(self) -> float:
        """The decisive anomaly score (0 when the tool gave none, as topology does)."""
        score = self.signals.get("anomaly_score")
        return float(score) if isinstance(score, int | float) else 0.0

    @property
    def moved(self) -> bool:
        """Whether the tool saw the entity move past its refutation line (a score it could not decide on
        is in its contested band, not a clearance)."""
        return self.anomaly_score >= UNREMARKABLE

    @property
    def inherited(self) -> bool:
        """Whether the entity moved past the noise knee but a callee shows the same (its own share did
        not)."""
        raw, own = self.measurements.get("z"), self.measurements.get("own_z")
        return isinstance(raw, float) and isinstance(own, float) and raw >= KNEE > own


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
                # Names are identifiers, not words: "timeout-proxy" never reads as a timeout.
                entities=(*ctx.graph.names(), hypothesis.entity, ctx.alert.entity),
                structural=self.tool.source in STRUCTURAL_SOURCES,
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


ScoreFn = Callable[[ToolContext], Mapping[str, float]]
KindFn = Callable[[ToolContext, str], FaultKind | None]


@dataclass(frozen=True)
class Seeding:
    """A tool's contribution to seeding: per-entity own-origin scores (z-like, >= 0) and a kind hint.

    `weight` says how directly the tool isolates an origin: a canary comparison of a service's new and
    old versions under the same traffic is a controlled experiment, where a before/after deviation is
    confounded by everything that propagates. `reads` names the tools whose facts the scores read when
    they were recorded (those tools seed first).
    """

    scores: ScoreFn
    kind_hint: KindFn
    weight: float = 1.0
    reads: tuple[str, ...] = ()

    def weighed(self, z: float) -> float:
        """What an entity's score counts for in the ranking: `weight` times log1p of the score above the
        noise knee (monotone, bounded growth, so one extreme score cannot drown the others)."""
        if not math.isfinite(z):
            z = 1e6 if z > 0 else 0.0
        return self.weight * math.log1p(max(0.0, z - KNEE))


@dataclass(frozen=True)
class ToolSpec:
    """How an evidence tool declares itself, next to its code; `rca.tools.registry` lists them.

    Attributes:
        name: the tool's name (its package's).
        source: the evidence lane its records carry.
        make: builds the tool.
        needs: the telemetry it reads, any one of these (empty: none, it always runs).
        seeding: its share of the suspect ranking, if any.
        examines: the fault kinds whose kind-level hypotheses its answer speaks to on its own.
        checks: the details (`instance`, `metric`, `change`, ...) whose hypotheses it checks.
        kinds: the fault kinds its telemetry makes plausible at an entity (refining a service).
        details: the details its telemetry names below an entity's fault kind (refining a kind).
        record: records, once the loop has ended, the facts the conclusion needs from it (hop
            observations, change facts); facts it records as it runs need no hook.
    """

    name: str
    source: Source
    make: Callable[[], Tool]
    needs: frozenset[Modality] = frozenset()
    seeding: Seeding | None = None
    examines: frozenset[str] = frozenset()
    checks: frozenset[str] = frozenset()
    kinds: Callable[[ToolContext, str], Sequence[FaultKind]] | None = None
    details: Callable[[ToolContext, str, FaultKind], Sequence[str]] | None = None
    record: Callable[[ToolContext], None] | None = None
