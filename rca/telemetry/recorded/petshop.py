"""PetShop (Amazon Science) cases: 5-minute CloudWatch/X-Ray metrics per node plus a call graph.

- Entities: the dataset's node names verbatim (e.g. `PetSite`, `PetSearch_AWS::ECS::Fargate`); the
  kind is read from the AWS suffix (database, queue, function, remote, client, service).
- Window: the issue's `metrics.csv` rows, [first timestamp, last timestamp + 5 min).
- Baseline: the regime's `noissue/metrics.csv` (a separate ~2-day normal recording), read only when a
  query touches its time span; absent for the temporal regimes (then the part of the window before
  onset is the baseline, as for other datasets).
- Topology: `<regime>/graph.csv` adjacency matrix (row calls column).
- Alert: the index `alert` column (`PetSite:latency@...`, which is the case's `target`); `target.json`
  is never opened because it also holds the root cause. Without a hint, the front end's latency /
  availability are scored against the normal recording by the shared rule.
- Units: latency in seconds (X-Ray), requests = count per 5-min point, availability = percent.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from rca.telemetry.model import Alert, DependencyGraph, Direction, TimeWindow
from rca.telemetry.recorded import CaseRef, RecordedCase, case_files, parse_alert_hint, reading, time_span
from rca.telemetry.recorded.alerting import Signal, detect_alert
from rca.telemetry.recorded.source import ColumnSpec, RecordedSource, TableRecording
from rca.telemetry.topology import graph_from_edges

STEP = 300.0  # seconds between points
FRONT_END = "PetSite"

# (metric, statistic) -> (normalised name, unit)
VOCABULARY: dict[tuple[str, str], tuple[str, str]] = {
    ("latency", "Average"): ("latency_mean", "s"),
    ("latency", "p50"): ("latency_p50", "s"),
    ("latency", "p90"): ("latency_p90", "s"),
    ("latency", "p95"): ("latency_p95", "s"),
    ("latency", "p99"): ("latency_p99", "s"),
    ("requests", "Sum"): ("requests", "count"),
    ("availability", "Average"): ("success_rate", "%"),
}
# What the alert hint's metric family means, at the statistic PetShop's targets use.
HINT_METRIC = {"latency": "latency_mean", "availability": "success_rate"}


def entity_kind(node: str) -> str:
    """The node's kind, read from its AWS suffix."""
    if "DynamoDB" in node or "Database::SQL" in node or node.startswith("PGSQL"):
        return "database"
    if "SQS" in node or "SimpleNotificationService" in node:
        return "queue"
    if "Lambda" in node or node.startswith("lambda_"):
        return "function"
    if node.endswith("_remote"):
        return "remote"
    if node.endswith("_client"):
        return "client"
    return "service"


@lru_cache(maxsize=32)
def _read_metrics(path: str) -> pd.DataFrame:
    """One PetShop metrics.csv (3 header rows), indexed by unix seconds."""
    with reading(path):
        frame = pd.read_csv(path, header=[0, 1, 2], index_col=0)
        frame.index = frame.index.astype(np.float64)
        return frame.sort_index()


@lru_cache(maxsize=8)
def _read_graph(path: str) -> DependencyGraph:
    with reading(path):
        matrix = pd.read_csv(path, index_col=0)
        values = matrix.apply(pd.to_numeric, errors="coerce").fillna(0.0).to_numpy(dtype=np.float64)
    nodes = [str(n) for n in matrix.index]
    callees = [str(c) for c in matrix.columns]
    rows, cols = np.nonzero(values > 0)
    edges = [(nodes[i], callees[j], float(values[i, j])) for i, j in zip(rows, cols, strict=True)]
    return graph_from_edges(edges, extra_entities=nodes, kinds={n: entity_kind(n) for n in nodes})


def _specs(frame: pd.DataFrame, file_key: str) -> list[ColumnSpec]:
    specs = []
    for col in frame.columns:
        node, metric, stat = (str(part) for part in col)
        norm = VOCABULARY.get((metric, stat))
        name, unit = norm if norm else (f"{metric}_{stat}".lower(), "")
        specs.append(
            ColumnSpec(
                entity=str(node),
                name=name,
                unit=unit,
                file_key=file_key,
                column=tuple(col),
                original=f"{metric}/{stat}",
            )
        )
    return specs


def _paths(data_dir: Path, ref: CaseRef) -> tuple[Path, Path, Path]:
    files = case_files(ref)
    metrics = next((f for f in files if "/noissue/" not in f and f.endswith("metrics.csv")), None)
    graph = next((f for f in files if f.endswith("graph.csv")), None)
    normal = next((f for f in files if "/noissue/" in f), None)
    if metrics is None or graph is None:
        raise ValueError(f"case {ref.case_id}: index `files` names no metrics.csv / graph.csv")
    normal_path = data_dir / normal if normal else data_dir / "__absent__"
    return data_dir / metrics, data_dir / graph, normal_path


def load(data_dir: Path, ref: CaseRef) -> RecordedCase:
    """Load one PetShop case (the issue file is tiny and read now; the normal recording lazily)."""
    metrics_path, graph_path, normal_path = _paths(data_dir, ref)
    issue = _read_metrics(str(metrics_path))
    with reading(metrics_path):
        window = time_span(issue.index, STEP)
        specs = _specs(issue, "issue")
    reader: Callable[[str], pd.DataFrame] = lambda key: issue  # noqa: E731 - one frame
    recordings = [TableRecording(window, specs, reader)]
    baseline: TimeWindow | None = None
    if normal_path.is_file():
        # The normal file's span is needed for `baseline_window`: read its first column only (4 header rows).
        with reading(normal_path):
            stamps = pd.read_csv(normal_path, usecols=[0], skiprows=4, header=None).iloc[:, 0].astype(float)
            baseline = time_span(stamps, STEP)
        normal_key = str(normal_path)
        normal_specs = [ColumnSpec(s.entity, s.name, s.unit, normal_key, s.column, s.original) for s in specs]
        recordings.append(TableRecording(baseline, normal_specs, lambda key: _read_metrics(key)))
    source = RecordedSource(
        name=ref.case_id,
        range=window,
        graph=lambda: _read_graph(str(graph_path)),
        recordings=recordings,
        baseline=baseline,
    )
    with reading(metrics_path):
        alert = _alert(ref, source, window)
    return RecordedCase(ref=ref, source=source, alert=alert, window=window)


def _alert(ref: CaseRef, source: RecordedSource, window: TimeWindow) -> Alert:
    hint = parse_alert_hint(ref.alert_hint)
    if hint is not None:
        entity = hint.entity or FRONT_END
        family = hint.metric or "latency"
        return Alert(
            name=f"{entity} {family}",
            entity=entity,
            fired_at=hint.fired_at,
            metric=HINT_METRIC.get(family, family),
            summary=f"{entity} {family} alert (recorded case target)",
            labels={"source": "case_index", "metric_family": family},
        )
    # No hint: score the front end against the normal recording (or the window's first point).
    signals = []
    base_window = source.baseline or TimeWindow(window.start, window.start + STEP)
    for name, direction in (("latency_mean", Direction.UP), ("success_rate", Direction.DOWN)):
        cur = source.metrics(FRONT_END, window, [name])
        base = source.metrics(FRONT_END, base_window, [name])
        if cur:
            signals.append(
                Signal(
                    FRONT_END,
                    name,
                    cur[0].timestamps,
                    cur[0].values,
                    base[0].values if base else np.array([]),
                    direction,
                )
            )
    return detect_alert(signals, window, name=f"{FRONT_END} anomaly", fallback_entity=FRONT_END)
