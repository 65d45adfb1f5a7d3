"""Small constructed incidents on a real RecordedSource (frames in memory instead of files)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import Alert, DependencyGraph, Edge, Entity, Event, TimeWindow
from rca.telemetry.recorded.source import ColumnSpec, RecordedSource, TableRecording
from rca.tools.base import ToolContext, ToolResult

T0 = 1_700_000_000.0
STEP = 60.0
MINUTES = 90  # 60 minutes of baseline, then the incident
ONSET = T0 + 60 * STEP


def build(
    edges: Sequence[tuple[str, str]],
    faults: Mapping[tuple[str, str], float],
    *,
    alert_entity: str = "frontend",
    alert_metric: str = "latency_p90",
    events: Sequence[Event] = (),
    seed: int = 7,
    kinds: Mapping[str, str] | None = None,
    starts: Mapping[tuple[str, str], int] | None = None,
    ends: Mapping[tuple[str, str], int] | None = None,
    pods: Mapping[str, Sequence[tuple[str, int | None]]] | None = None,
    history: int | None = None,
    pod_faults: Mapping[str, float] | None = None,
) -> tuple[RecordedSource, Alert]:
    """A source where every service has cpu, memory, latency and success-rate series with small noise,
    and `faults[(service, metric)]` multiplies that metric from the onset on (from minute
    `starts[(service, metric)]` when given, up to minute `ends[...]`). `kinds` sets entity kinds
    (default `service`).
    `pods[service]` adds per-instance cpu series `(instance, first minute it reports or None for never)`;
    `history` keeps only that many minutes before the onset (a recording with almost no baseline);
    `pod_faults[instance]` multiplies that instance's cpu from the onset on."""
    services = sorted({s for edge in edges for s in edge})
    rng = np.random.default_rng(seed)
    index = T0 + STEP * np.arange(MINUTES)
    columns: dict[str, np.ndarray] = {}
    specs: list[ColumnSpec] = []
    levels = {"cpu": 20.0, "memory": 300.0, "latency_p90": 0.2, "success_rate": 100.0}
    for service in services:
        for metric, level in levels.items():
            noise = rng.normal(0.0, level * 0.01, MINUTES) if metric != "success_rate" else np.zeros(MINUTES)
            values = level + noise
            factor = faults.get((service, metric))
            if factor is not None:
                begin = (starts or {}).get((service, metric), 60)
                end = (ends or {}).get((service, metric), MINUTES)
                values[begin:end] = values[begin:end] * factor
            column = f"{service}:{metric}"
            columns[column] = values
            specs.append(ColumnSpec(service, metric, "", "frame", column, column))
    for service, instances in (pods or {}).items():
        for instance, first in instances:
            values = 20.0 + rng.normal(0.0, 0.2, MINUTES)
            values[: MINUTES if first is None else first] = np.nan
            values[60:] *= (pod_faults or {}).get(instance, 1.0)
            column = f"{service}:{instance}:cpu"
            columns[column] = values
            specs.append(ColumnSpec(service, "cpu", "", "frame", column, column, instance))
    frame = pd.DataFrame(columns, index=index)
    begin = T0 if history is None else ONSET - history * STEP
    frame = frame[frame.index >= begin]
    window = TimeWindow(begin, T0 + STEP * MINUTES)
    graph = DependencyGraph(
        tuple(Entity(s, kind=(kinds or {}).get(s, "service")) for s in services),
        tuple(Edge(a, b) for a, b in edges),
    )
    source = RecordedSource(
        name="scenario",
        range=window,
        graph=graph,
        recordings=(TableRecording(window, specs, lambda key: frame),),
        change_events=tuple(events),
    )
    alert = Alert(name="HighLatency", entity=alert_entity, fired_at=ONSET + 2 * STEP, metric=alert_metric)
    return source, alert


def propagate_latency(path: Sequence[str], factor: float) -> dict[tuple[str, str], float]:
    """The same latency factor on every service of a call path (callers inherit a callee's delay)."""
    return {(s, "latency_p90"): factor for s in path}


@dataclass
class ScriptedTool:
    """A tool whose answer is looked up by the examined hypothesis (a constructed evidence sequence)."""

    name: str
    source: Source
    script: Callable[[Hypothesis], float | None]  # anomaly score, or None: no decisive signal

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        score = self.script(hypothesis)
        if score is None:
            return ToolResult(summary=f"{self.name}: nothing to say about {hypothesis.id}")
        return ToolResult(summary=f"{self.name}: {hypothesis.id}", signals={"anomaly_score": score})
