"""RCD Sock Shop cases: 1-second container metrics, a faulty recording and a separate normal one.

- Entities: the 13 containers named by the column prefixes (`front-end`, `carts`, `carts-db`, ...).
- Window: the whole `anomalous.csv` (the dataset has no injection timestamp; the file *is* the faulty
  period), [first time, last time + 1 s).
- Baseline: `normal.csv`, a separate recording hours or days away (read only when queried).
- Topology: Sock Shop's public architecture, written below as a constant (no file ships it).
- Alert: none is given, so the shared rule (`alerting.py`) scores the front end's own signals
  (`front-end` has only cpu and memory here) against `normal.csv`, with persistence 5 points (5 s).
- Units and names: `<svc>_cpu` -> `cpu` (% of one core), `<svc>_mem` -> `memory` (bytes),
  `<svc>_lod` -> `requests` (requests/s), `<svc>_lat_50/90/99` -> `latency_p50/p90/p99` (s).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from rca.telemetry.model import Alert, DependencyGraph, Direction, TimeWindow
from rca.telemetry.recorded import CaseRef, RecordedCase, case_files, reading, time_span
from rca.telemetry.recorded.alerting import Signal, detect_alert
from rca.telemetry.recorded.source import ColumnSpec, RecordedSource, TableRecording
from rca.telemetry.topology import graph_from_edges

FRONT_END = "front-end"
STEP = 1.0
PERSIST = 5

# Sock Shop (microservices-demo) call graph, from its public architecture diagram and compose file.
SOCK_SHOP_EDGES: tuple[tuple[str, str], ...] = (
    ("front-end", "carts"),
    ("front-end", "catalogue"),
    ("front-end", "orders"),
    ("front-end", "user"),
    ("orders", "carts"),
    ("orders", "payment"),
    ("orders", "shipping"),
    ("orders", "user"),
    ("carts", "carts-db"),
    ("catalogue", "catalogue-db"),
    ("orders", "orders-db"),
    ("user", "user-db"),
    ("shipping", "rabbitmq"),
    ("rabbitmq", "queue-master"),
)
KINDS = {
    "carts-db": "database",
    "catalogue-db": "database",
    "orders-db": "database",
    "user-db": "database",
    "rabbitmq": "queue",
}

_COLUMN = re.compile(r"^(?P<svc>.+)_(?P<metric>cpu|mem|lod|lat_50|lat_90|lat_99)$")
VOCABULARY: dict[str, tuple[str, str]] = {
    "cpu": ("cpu", "%"),
    "mem": ("memory", "bytes"),
    "lod": ("requests", "req/s"),
    "lat_50": ("latency_p50", "s"),
    "lat_90": ("latency_p90", "s"),
    "lat_99": ("latency_p99", "s"),
}


def topology() -> DependencyGraph:
    """Sock Shop's dependency graph (a documented constant)."""
    return graph_from_edges(((a, b, 1.0) for a, b in SOCK_SHOP_EDGES), kinds=KINDS)


@lru_cache(maxsize=16)
def _read(path: str) -> pd.DataFrame:
    with reading(path):
        frame = pd.read_csv(path)
        if "time" not in frame.columns:
            raise ValueError("no `time` column")
        frame = frame.set_index("time")
        frame.index = frame.index.astype(np.float64)
        return frame.sort_index()


def _specs(columns: list[str], file_key: str) -> list[ColumnSpec]:
    specs = []
    for col in columns:
        m = _COLUMN.match(col)
        if m is None:
            continue
        name, unit = VOCABULARY[m.group("metric")]
        specs.append(ColumnSpec(m.group("svc"), name, unit, file_key, col, col))
    return specs


def load(data_dir: Path, ref: CaseRef) -> RecordedCase:
    """Load one RCD case (the anomalous file is small and read now; normal.csv lazily)."""
    files = case_files(ref)
    anomalous = next((f for f in files if f.endswith("anomalous.csv")), None)
    normal = next((f for f in files if f.endswith("normal.csv")), None)
    if anomalous is None:
        raise ValueError(f"case {ref.case_id}: index `files` names no anomalous.csv")
    frame = _read(str(data_dir / anomalous))
    with reading(data_dir / anomalous):
        window = time_span(frame.index, STEP)
        specs = _specs(list(frame.columns), str(data_dir / anomalous))
    recordings = [TableRecording(window, specs, lambda key: _read(key))]
    baseline: TimeWindow | None = None
    if normal is not None and (data_dir / normal).is_file():
        normal_key = str(data_dir / normal)
        with reading(normal_key):
            stamps = pd.read_csv(normal_key, usecols=["time"])["time"].astype(float)
            baseline = time_span(stamps, STEP)
        normal_specs = [ColumnSpec(s.entity, s.name, s.unit, normal_key, s.column, s.original) for s in specs]
        recordings.append(TableRecording(baseline, normal_specs, lambda key: _read(key)))
    source = RecordedSource(
        name=ref.case_id, range=window, graph=topology, recordings=recordings, baseline=baseline
    )
    with reading(data_dir / anomalous):
        alert = _alert(source, window)
    return RecordedCase(ref=ref, source=source, alert=alert, window=window)


def _alert(source: RecordedSource, window: TimeWindow) -> Alert:
    base_window = source.baseline
    signals = []
    for series in source.metrics(FRONT_END, window):
        base = source.metrics(FRONT_END, base_window, [series.name]) if base_window else []
        signals.append(
            Signal(
                FRONT_END,
                series.name,
                series.timestamps,
                series.values,
                base[0].values if base else np.array([]),
                Direction.BOTH,  # cpu / memory can go either way under a downstream fault
            )
        )
    return detect_alert(
        signals, window, name=f"{FRONT_END} anomaly", fallback_entity=FRONT_END, persist=PERSIST
    )
