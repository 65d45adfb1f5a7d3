"""PetShop: faults injected into 5-minute windows of a regime's `noissue/metrics.csv`.

Normal period: each regime with a normal recording (`<regime>/noissue/metrics.csv`, ~2 days). Its
first `BASELINE_SHARE` of rows becomes the suite's `noissue/metrics.csv` for that regime (the case's
separate normal recording, as in the dataset); the windows faults are injected into are drawn from the
rest, so no injected row is also a baseline row. A case is `ISSUE_ROWS` consecutive rows (the
dataset's own issue files hold 5), the onset inside the second, and the index alert
`PetSite:<latency|availability>@T` is the shared rule's firing on the entry's average latency and
availability against the baseline.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

from rca.evaluation.inject import (
    CAPACITY,
    NO_ALERT,
    NOT_ITS_ALERT,
    UNREACHABLE,
    Draw,
    Fault,
    Kind,
    Skipped,
    Written,
    caused_by_fault,
    delayed_share,
    digraph,
    draw,
    index_row,
    injected_path,
    rule_alert,
    shared_resources,
    step_profile,
    utc,
)
from rca.telemetry.model import Direction, TimeWindow
from rca.telemetry.recorded.alerting import Signal
from rca.telemetry.recorded.petshop import FRONT_END, STEP, _read_graph, _read_metrics

ISSUE_ROWS = 5  # the dataset's issue files hold 5 rows (25 minutes)
BASELINE_SHARE = 0.6  # of a normal recording kept as the baseline; windows come from the rest
ALERT_SIGNALS = (
    (("latency", "Average"), Direction.UP, "latency"),
    (("availability", "Average"), Direction.DOWN, "availability"),
)


class PetShopInjector:
    """Latency, errors and overload of a shared resource, on PetShop's metrics."""

    system = "petshop"
    dataset = "petshop"
    name = "PetShop (AWS)"

    def __init__(self, data_dir: Path) -> None:
        root = data_dir / "petshop" / "dataset"
        self.regimes = (
            sorted(
                p.name
                for p in root.iterdir()
                if (p / "noissue" / "metrics.csv").is_file() and (p / "graph.csv").is_file()
            )
            if root.is_dir()
            else []
        )
        self.root = root
        self.graphs = {r: digraph(_read_graph(str(root / r / "graph.csv"))) for r in self.regimes}

    def _normal(self, regime: str) -> pd.DataFrame:
        return _read_metrics(str(self.root / regime / "noissue" / "metrics.csv"))

    def kinds(self) -> tuple[Kind, ...]:
        """The fault kinds the system's recorded telemetry can show (none without its data)."""
        return (Kind.LATENCY, Kind.ERRORS, Kind.OVERLOAD) if self.regimes else ()

    def entities(self, kind: Kind) -> list[str]:
        """The entities a fault of `kind` can be injected into."""
        """Entities every regime's graph reaches from the entry and whose latency is recorded."""
        common: set[str] | None = None
        for regime, g in self.graphs.items():
            nodes = {str(c[0]) for c in self._normal(regime).columns if c[1] == "latency"}
            reach = ({FRONT_END} | _descendants(g, FRONT_END)) & nodes
            if kind is Kind.OVERLOAD:
                reach &= set(shared_resources(g))
            common = reach if common is None else common & reach
        return sorted(common or ())

    def write(self, fault: Fault, out: Path) -> Written | Skipped:
        """Write the case of `fault` under `out`, unless its effect never trips the alert or the alert
        would fire as early without it."""
        d = draw(fault)
        regime = self.regimes[int(d.rng.integers(len(self.regimes)))]
        g = self.graphs[regime]
        path = injected_path(g, fault.entity, FRONT_END, d.rng)
        if path is None:
            return UNREACHABLE
        normal = self._normal(regime)
        split = int(len(normal) * BASELINE_SHARE)
        base_dir = out / "petshop" / regime
        if not (base_dir / "noissue" / "metrics.csv").is_file():
            (base_dir / "noissue").mkdir(parents=True, exist_ok=True)
            normal.iloc[:split].to_csv(base_dir / "noissue" / "metrics.csv")
            shutil.copyfile(self.root / regime / "graph.csv", base_dir / "graph.csv")
        pool = normal.iloc[split:]
        start = int(d.rng.integers(0, len(pool) - ISSUE_ROWS))
        window = pool.iloc[start : start + ISSUE_ROWS].copy()
        times = window.index.to_numpy(dtype=np.float64)
        onset = float(times[1] + d.rng.uniform(0.0, STEP))
        profile = step_profile(times, onset, STEP)
        clean = window.copy()
        _apply(window, fault, path, g, profile, d)

        scan = TimeWindow(float(times[1]), float(times[-1]) + STEP)  # from the onset's row on
        baseline = normal.iloc[:split]
        signals = _alert_signals(window, baseline)
        alert = rule_alert(signals, scan)
        if alert is None:
            return NO_ALERT
        if not caused_by_fault(signals, _alert_signals(clean, baseline), scan):
            return NOT_ITS_ALERT
        # A 5-minute datapoint is evaluated once its period has data: the alarm lies inside the row
        # it fired on, not before the onset.
        fired = max(alert.fired_at, onset) + float(d.rng.uniform(0.0, 60.0))
        rel = f"petshop/{regime}/synthetic/{fault.kind.value}_{fault.number:03d}"
        case_dir = out / rel
        case_dir.mkdir(parents=True, exist_ok=True)
        window.to_csv(case_dir / "metrics.csv")
        family = alert.metric or "latency"
        (case_dir / "target.json").write_text(
            json.dumps(
                {
                    "target": {
                        "node": FRONT_END,
                        "metric": family,
                        "agg": "Average",
                        "timestamp": int(fired),
                    },
                    "root_cause": {"node": fault.entity, "metric": None},
                    "metadata": {
                        "synthetic": {"kind": fault.kind.value, "magnitude": d.magnitude, "seed": fault.seed}
                    },
                },
                indent=2,
            )
        )
        row = index_row(
            self.dataset,
            fault,
            self.name,
            onset,
            f"{FRONT_END}:{family}@{utc(fired)}",
            "metrics(latency,requests,availability; 5-min)",
            f"{rel}/{{metrics.csv,target.json}}; petshop/{regime}/graph.csv; "
            f"petshop/{regime}/noissue/metrics.csv",
        )
        return Written(row, path)


def _descendants(g: nx.DiGraph, node: str) -> set[str]:
    return set(nx.descendants(g, node)) if node in g else set()


def _columns(frame: pd.DataFrame, node: str, metric: str) -> list[tuple[str, str, str]]:
    return [(str(c[0]), str(c[1]), str(c[2])) for c in frame.columns if c[0] == node and c[1] == metric]


def _alert_signals(window: pd.DataFrame, baseline: pd.DataFrame) -> list[Signal]:
    """The entry's symptom signals in `window` that the alert rule reads, against `baseline`."""
    times = window.index.to_numpy(dtype=np.float64)
    return [
        Signal(
            FRONT_END,
            family,
            times,
            window[key].to_numpy(dtype=np.float64),
            baseline[key].to_numpy(dtype=np.float64),
            direction,
        )
        for column, direction, family in ALERT_SIGNALS
        if (key := (FRONT_END, *column)) in window.columns
    ]


def _apply(
    frame: pd.DataFrame, fault: Fault, path: tuple[str, ...], g: nx.DiGraph, profile: np.ndarray, d: Draw
) -> None:
    """Add the fault's effect to `frame` in place (see rca.evaluation.inject for the physics)."""
    n = len(frame)
    entity = fault.entity
    if fault.kind is Kind.LATENCY:
        for node in path:
            reached = _reached(frame, entity, node)
            for col in _columns(frame, node, "latency"):
                frame[col] = frame[col] + delayed_share(col[2], reached) * d.magnitude * profile * d.jitter(n)
    elif fault.kind is Kind.ERRORS:
        for node in path:
            share = d.magnitude * _reached(frame, entity, node)
            for col in _columns(frame, node, "availability"):
                frame[col] = frame[col] * (1.0 - np.clip(share * profile * d.jitter(n), 0.0, 1.0))
    elif fault.kind is Kind.OVERLOAD:
        _overload(frame, entity, path, g, profile, d)


def _reached(frame: pd.DataFrame, entity: str, node: str) -> float:
    """The share of `node`'s requests that reached `entity` (1 for the entity itself): each request
    the entity serves answers at most one request of each caller above it, so a caller fails or
    waits on at most that many. Unknown (a count not recorded) counts as all of them."""
    if node == entity:
        return 1.0
    mine = [frame[c].median() for c in _columns(frame, entity, "requests")]
    theirs = [frame[c].median() for c in _columns(frame, node, "requests")]
    if not mine or not theirs or not np.isfinite(mine[0]) or not np.isfinite(theirs[0]) or theirs[0] <= 0:
        return 1.0
    return float(min(1.0, max(0.0, mine[0]) / theirs[0]))


def _overload(
    frame: pd.DataFrame, entity: str, path: tuple[str, ...], g: nx.DiGraph, profile: np.ndarray, d: Draw
) -> None:
    """An overload of `entity`: more requests, admitted ones waiting longer, the rest throttled. A
    caller fails and waits only on its requests that reached the resource (`_reached`, read from the
    volumes before the overload): a caller that sends it a tenth of its requests fails a tenth of the
    throttled share."""
    n = len(frame)
    k = d.magnitude
    throttled = max(0.0, 1.0 - CAPACITY / k)
    sufferers = set(path) | set(g.predecessors(entity))
    reached = {node: _reached(frame, entity, node) for node in sufferers}
    for col in _columns(frame, entity, "requests"):
        frame[col] = frame[col] * (1.0 + (k - 1.0) * profile * d.jitter(n))
    # The admitted requests queue at the saturated resource: their wait grows with the overload.
    added = {}
    for col in _columns(frame, entity, "latency"):
        before = frame[col].to_numpy(dtype=np.float64)
        after = before * (1.0 + (k / CAPACITY) * profile * d.jitter(n))
        added[col[2]] = np.nan_to_num(after - before)
        frame[col] = after
    for node in sufferers:
        for col in _columns(frame, node, "availability"):
            frame[col] = frame[col] * (1.0 - throttled * reached[node] * profile)
        if node != entity:
            for col in _columns(frame, node, "latency"):
                frame[col] = frame[col] + delayed_share(col[2], reached[node]) * added.get(col[2], 0.0)
