"""RCD Sock Shop: faults injected into one normal recording, judged against another.

Normal period: the `normal.csv` recordings of the dev cases (each a separate, fault-free recording).
A case takes two different ones: the first stays its `normal.csv`, the second becomes its
`anomalous.csv` with the fault injected from its first sample on (in the dataset the whole anomalous
file is the faulty period and no injection time is given). The index carries no alert: the RCD
loader's own rule finds it on the front end, as for recorded cases.

Kinds its telemetry can show: `cpu` and `memory` for every container (each has both series);
`latency` where the entity's own latency is recorded.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

from rca.evaluation.inject import (
    CPU_LATENCY_PER_CORE,
    UNREACHABLE,
    Draw,
    Fault,
    Kind,
    Skipped,
    Written,
    digraph,
    draw,
    index_row,
    injected_path,
    ramp_profile,
    step_profile,
)
from rca.telemetry.recorded.rcd import FRONT_END, STEP, topology

LATENCIES = ("lat_50", "lat_90", "lat_99")
PERCENT_PER_CORE = 100.0  # `<svc>_cpu` is in % of one core


class RcdInjector:
    """CPU hogs, memory leaks and latency on Sock Shop's 1-second container metrics."""

    system = "rcd"
    dataset = "rcd-sockshop"
    name = "Sock Shop"

    def __init__(self, data_dir: Path) -> None:
        root = data_dir / "rcd-sockshop" / "sock-shop-data"
        self.normals = sorted(root.glob("*/*/normal.csv")) if root.is_dir() else []
        self.graph = digraph(topology())
        self.columns = list(pd.read_csv(self.normals[0], nrows=0).columns) if self.normals else []

    def _has(self, entity: str, metric: str) -> bool:
        return f"{entity}_{metric}" in self.columns

    def kinds(self) -> tuple[Kind, ...]:
        """The fault kinds the system's recorded telemetry can show (none without its data)."""
        return (Kind.CPU, Kind.MEMORY, Kind.LATENCY) if len(self.normals) >= 2 else ()

    def entities(self, kind: Kind) -> list[str]:
        """The entities a fault of `kind` can be injected into."""
        reach = {FRONT_END} | nx.descendants(self.graph, FRONT_END)
        if kind is Kind.LATENCY:
            return sorted(e for e in reach if self._has(e, LATENCIES[0]))
        wanted = "cpu" if kind is Kind.CPU else "mem"
        return sorted(e for e in reach if self._has(e, wanted))

    def write(self, fault: Fault, out: Path) -> Written | Skipped:
        """Write the case of `fault` under `out` (the loader's rule names its alert, as for recorded
        cases); skipped only when the entry never reaches the entity."""
        d = draw(fault)
        path = injected_path(self.graph, fault.entity, FRONT_END, d.rng)
        if path is None:
            return UNREACHABLE
        first, second = d.rng.choice(len(self.normals), size=2, replace=False)
        normal = pd.read_csv(self.normals[int(first)])
        faulty = pd.read_csv(self.normals[int(second)])
        times = faulty["time"].to_numpy(dtype=np.float64)
        onset = float(times[0])
        _apply(faulty, fault, path, times, onset, d)
        rel = f"rcd-sockshop/sock-shop-data/synthetic/{fault.kind.value}_{fault.number:03d}"
        case_dir = out / rel
        case_dir.mkdir(parents=True, exist_ok=True)
        normal.to_csv(case_dir / "normal.csv", index=False)
        faulty.to_csv(case_dir / "anomalous.csv", index=False)
        row = index_row(
            self.dataset,
            fault,
            self.name,
            onset,
            "",
            "metrics(cpu,mem,load,latency p50/90/99; 1-s)",
            f"{rel}/{{normal.csv,anomalous.csv}}",
        )
        return Written(row, path)


def _apply(
    frame: pd.DataFrame, fault: Fault, path: tuple[str, ...], times: np.ndarray, onset: float, d: Draw
) -> None:
    """Add the fault's effect in place (the physics: rca.evaluation.inject)."""
    n = len(frame)
    entity = fault.entity
    profile = step_profile(times, onset, STEP)
    added: dict[str, np.ndarray] = {}
    if fault.kind is Kind.CPU:
        frame[f"{entity}_cpu"] = frame[f"{entity}_cpu"] + d.magnitude * PERCENT_PER_CORE * profile * d.jitter(
            n
        )
        # Contention slows the entity's own requests; its callers on the path wait as long.
        for lat in LATENCIES:
            col = f"{entity}_{lat}"
            if col in frame:
                before = frame[col].to_numpy(dtype=np.float64)
                added[lat] = before * CPU_LATENCY_PER_CORE * d.magnitude * profile * d.jitter(n)
    elif fault.kind is Kind.MEMORY:
        col = f"{entity}_mem"
        footprint = float(np.nanmedian(frame[col].to_numpy(dtype=np.float64)))
        growth = ramp_profile(times, onset, float(times[-1]))
        frame[col] = frame[col] + d.magnitude * footprint * growth * d.jitter(n)
    elif fault.kind is Kind.LATENCY:
        for lat in LATENCIES:
            added[lat] = d.magnitude * profile * d.jitter(n)
    for node in path:
        for lat, extra in added.items():
            col = f"{node}_{lat}"
            if col in frame:
                frame[col] = frame[col] + extra
