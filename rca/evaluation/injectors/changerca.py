"""ChangeRCA: a defective release among concurrent ones, injected into a dev case's pre-release minutes.

Normal period: a dev case's rows before the first release of its plan (every pod still on `v1`). The
first `BASELINE_ROWS` of them stay as they are; from then on the synthetic plan rolls out the
defective service and 0 to `MAX_COMPANIONS` healthy ones concurrently, pod by pod (each step
replaces one `v1` pod by a `v2` pod whose rows continue the replaced pod's), as ChangeRCA's
experiments do. The defect: the `v2` pods of the defective service fail a share of the requests they
serve; the callers on the injected path fail in proportion to the traffic that reached a `v2` pod
(per-edge success rates of pods and services). The case folder has the dataset's layout (pod edge
files, `source_success`, `destination_success`, `dependency`, `<case>.json` with the plan), and the
index alert is `detected T`: the shared rule's first firing on the front end's client success rates,
plus the `for: 1m` minute.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from functools import cache
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

from rca.evaluation.inject import (
    NO_ALERT,
    NOT_ITS_ALERT,
    UNREACHABLE,
    Draw,
    Fault,
    Kind,
    Skipped,
    Written,
    caused_by_fault,
    digraph,
    draw,
    index_row,
    injected_path,
    rule_alert,
    utc,
)
from rca.telemetry.cases import read_index
from rca.telemetry.model import Direction, TimeWindow
from rca.telemetry.recorded.alerting import Signal
from rca.telemetry.recorded.changerca import FRONT_END, STEP, _read_dependency, read_record, releases
from rca.telemetry.recorded.changerca import _read_table as _read

BASELINE_ROWS = 8  # minutes before the first synthetic release (the loader's baseline)
MAX_COMPANIONS = 4  # healthy releases alongside the defective one (ChangeRCA rolls out 1 to 6)
STEP_EVERY = (50.0, 130.0)  # seconds between rollout steps (ChangeRCA's plans: about a minute or two)
_POD = re.compile(
    r"^(?P<pod>(?P<svc>[a-z0-9-]+?)-(?P<ver>v\d+)-[a-z0-9]+-[a-z0-9]+)_(?P<caller>[a-z0-9-]+)_(?P<callee>[a-z0-9-]+)\.csv\.gz$"
)


class ChangeRcaInjector:
    """Bad deploys: one defective release among concurrent ones, on ChangeRCA's Online Boutique."""

    system = "changerca"
    dataset = "changerca-ob"
    name = "OnlineBoutique"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        refs = read_index(data_dir, split="dev", datasets=[self.dataset])
        self.cases = [data_dir / r.files[0].rstrip("/") for r in refs if r.files]

    def kinds(self) -> tuple[Kind, ...]:
        """The fault kinds the system's recorded telemetry can show (none without its data)."""
        return (Kind.BAD_DEPLOY,) if self.cases else ()

    @cache  # noqa: B019 - one injector per suite
    def _services(self, case: Path) -> tuple[str, ...]:
        return tuple(sorted({m.group("svc") for n in case.iterdir() if (m := _POD.match(n.name))}))

    def _graph(self, case: Path) -> nx.DiGraph:
        return digraph(_read_dependency(str(case / "dependency.csv.gz"), self._services(case)))

    def entities(self, kind: Kind) -> list[str]:
        """The entities a fault of `kind` can be injected into."""
        if not self.cases:
            return []
        case = self.cases[0]
        g = self._graph(case)
        reach = {FRONT_END} | (nx.descendants(g, FRONT_END) if FRONT_END in g else set())
        return sorted(set(self._services(case)) & reach)

    def write(self, fault: Fault, out: Path) -> Written | Skipped:
        """Write the case of `fault` under `out`, unless its effect never trips the alert (before the
        recording ends) or the alert would fire as early without it."""
        d = draw(fault)
        case = self.cases[int(d.rng.integers(len(self.cases)))]
        g = self._graph(case)
        path = injected_path(g, fault.entity, FRONT_END, d.rng)
        if path is None or fault.entity not in self._services(case):
            return UNREACHABLE
        record = read_record(case / f"{case.name}.json")
        first_release = min((r.release_time for r in releases(record)), default=float("inf"))
        src = _read(str(case / "source_success.csv.gz"))
        times = src.index.to_numpy(dtype=np.float64)
        normal = times[times < first_release]
        if normal.size < BASELINE_ROWS + 4:
            return NO_ALERT  # too short a period before the case's own releases for a rule to fire
        start, end = float(normal[0]), float(normal[-1]) + STEP
        release_at = float(normal[BASELINE_ROWS]) + float(d.rng.uniform(0.0, STEP))
        others = [s for s in self._services(case) if s != fault.entity]
        companions = list(
            d.rng.choice(others, size=int(d.rng.integers(0, MAX_COMPANIONS + 1)), replace=False)
        )
        pods = _pods(case)
        plan, swaps = {}, {}
        for svc in [fault.entity, *companions]:
            svc_plan, svc_swaps = _rollout(
                svc, pods.get(svc, []), release_at + float(d.rng.uniform(0, STEP)), d
            )
            plan[svc] = svc_plan
            swaps.update(svc_swaps)
        share = _v2_share(plan.get(fault.entity, {}), len(pods.get(fault.entity, [])))

        rel = f"changerca-ob/synthetic/{fault.kind.value}_{fault.number:03d}"
        case_out = out / rel
        case_out.mkdir(parents=True, exist_ok=True)
        effects = _Defect(fault, d, path, share)
        for name in sorted(n.name for n in case.iterdir() if _POD.match(n.name)):
            m = _POD.match(name)
            assert m is not None
            frame = _window(_read(str(case / name)), start, end)
            pod = m.group("pod")
            if pod in swaps:  # replaced at its step: the v1 pod's rows end, a v2 pod's begin
                new_pod, at = swaps[pod]
                old, new = frame[frame.index < at], frame[frame.index >= at].copy()
                _write(
                    effects.pod_edge(old, m.group("svc"), m.group("caller"), m.group("callee"), False),
                    case_out / name,
                )
                new_name = name.replace(pod, new_pod, 1)
                _write(
                    effects.pod_edge(new, m.group("svc"), m.group("caller"), m.group("callee"), True),
                    case_out / new_name,
                )
            else:
                _write(
                    effects.pod_edge(frame, m.group("svc"), m.group("caller"), m.group("callee"), False),
                    case_out / name,
                )
        for name in ("source_success.csv.gz", "destination_success.csv.gz"):
            frame = _window(_read(str(case / name)), start, end)
            _write(effects.service_edges(frame), case_out / name)
        shutil.copyfile(case / "dependency.csv.gz", case_out / "dependency.csv.gz")

        front = _read(str(case_out / "source_success.csv.gz"))
        scan = _scan(front, release_at, TimeWindow(start, end))
        signals = _front_signals(front, release_at)
        fired = rule_alert(signals, scan)
        # `for: 1m`, on whole minutes; a recording that ends before the alert would fire holds no incident
        detected = float(np.ceil(fired.fired_at / STEP) * STEP) + STEP if fired is not None else end
        skipped = NO_ALERT if fired is None or detected >= end else None
        fault_free = _window(_read(str(case / "source_success.csv.gz")), start, end)
        if skipped is None and not caused_by_fault(signals, _front_signals(fault_free, release_at), scan):
            skipped = NOT_ITS_ALERT
        if skipped is not None:
            shutil.rmtree(case_out)  # no case: none of its files stay
            return skipped
        before = [p for svc_pods in pods.values() for p in svc_pods]
        (case_out / f"{case_out.name}.json").write_text(
            json.dumps(
                {
                    "plan": plan,
                    "fault": "synthetic_defect",
                    "fault_release_service": fault.entity,
                    "normal_service_list": sorted(companions),
                    "before_change_list": before,
                    "experiment_time": utc(start),
                    "experiemnt_end_time": utc(end),
                    "detect_time": utc(detected),
                    "detect_timestamp": int(detected),
                },
                indent=1,
            )
        )
        row = index_row(
            self.dataset,
            fault,
            self.name,
            release_at,
            f"detected {utc(detected)}",
            "per-pod per-call-edge metrics (1-min) + release plan",
            f"{rel}/",
        )
        row["root_cause_detail"] = f"defective release among: {','.join(sorted([fault.entity, *companions]))}"
        return Written(row, path)


def _front_signals(front: pd.DataFrame, release_at: float) -> list[Signal]:
    """The front end's client success rates (each of its call edges), against the rows before the
    release."""
    base = front.index.to_numpy(dtype=np.float64) < release_at
    return [
        Signal(
            FRONT_END,
            f"client_success_rate{{{c}}}",
            front.index.to_numpy(dtype=np.float64),
            front[c].to_numpy(dtype=np.float64),
            front[c].to_numpy(dtype=np.float64)[base],
            Direction.DOWN,
        )
        for c in front.columns
        if c.startswith(f"{FRONT_END}_")
    ]


def _scan(front: pd.DataFrame, release_at: float, case: TimeWindow) -> TimeWindow:
    """Where the rule looks: from the last row before the release to the case's end."""
    times = front.index.to_numpy(dtype=np.float64)
    before = times[times < release_at]
    return TimeWindow(float(before[-1]) if before.size else case.start, case.end)


def _window(frame: pd.DataFrame, start: float, end: float) -> pd.DataFrame:
    return frame[(frame.index >= start) & (frame.index < end)].copy()


def _write(frame: pd.DataFrame, path: Path) -> None:
    if frame.empty:
        return
    with gzip.open(path, "wt", newline="") as fh:
        frame.to_csv(fh, index=False)


def _pods(case: Path) -> dict[str, list[str]]:
    """The v1 pods of every service (from the pod file names)."""
    out: dict[str, set[str]] = {}
    for n in case.iterdir():
        m = _POD.match(n.name)
        if m and m.group("ver") == "v1":
            out.setdefault(m.group("svc"), set()).add(m.group("pod"))
    return {s: sorted(p) for s, p in out.items()}


def _rollout(
    svc: str, pods: list[str], at: float, d: Draw
) -> tuple[dict[str, object], dict[str, tuple[str, float]]]:
    """A plan entry replacing `pods` one by one from `at`, and per old pod (its new pod, swap time)."""
    rs = "".join(d.rng.choice(list("bcdfghjklmnpqrstvwxz0123456789"), size=9))
    process, swaps, t = {}, {}, at
    for i, old in enumerate(pods):
        new = f"{svc}-v2-{rs}-{''.join(d.rng.choice(list('bcdfghjklmnpqrstvwxz2456789'), size=5))}"
        done = t + float(d.rng.uniform(*STEP_EVERY))
        process[str(int(t))] = {
            "v1": len(pods) - i - 1,
            "v2": i + 1,
            "release_pod": [new],
            "delete_pod": [old],
            "release_complete_time": utc(done),
            "release_complete_timestamp": int(done),
        }
        swaps[old] = (new, done)
        t = done
    return {"release_time": int(at), "target_replica": len(pods), "process": process}, swaps


def _v2_share(plan: dict[str, object], replicas: int) -> list[tuple[float, float]]:
    """(time, share of the service's replicas on v2 from then on), in time order."""
    process = plan.get("process", {})
    assert isinstance(process, dict)
    steps = sorted((float(s["release_complete_timestamp"]), int(s["v2"])) for s in process.values())
    return [(t, v2 / max(replicas, 1)) for t, v2 in steps]


class _Defect:
    """The defective release's effect on pod and service edge tables."""

    def __init__(
        self, fault: Fault, d: Draw, path: tuple[str, ...], share: list[tuple[float, float]]
    ) -> None:
        self.fault, self.d, self.path, self.share = fault, d, path, share
        self.edges = set(zip(path[1:], path, strict=False))  # (caller, callee) along the path

    def _share_at(self, times: np.ndarray) -> np.ndarray:
        out = np.zeros(times.shape)
        for t, s in self.share:
            out[times >= t] = s
        return out

    def pod_edge(self, frame: pd.DataFrame, owner: str, caller: str, callee: str, new: bool) -> pd.DataFrame:
        """One pod's table for one call edge (`owner`: the pod's service)."""
        if frame.empty or (caller, callee) not in self.edges:
            return frame
        if owner == self.fault.entity and callee == owner:
            # The defective service's own pods: only its v2 pods fail, each fully by the defect rate.
            failing = np.full(len(frame), self.d.magnitude if new else 0.0)
        else:
            failing = self.d.magnitude * self._share_at(frame.index.to_numpy(dtype=np.float64))
        frame["SuccessRate"] = frame["SuccessRate"] * (
            1.0 - np.clip(failing * self.d.jitter(len(frame)), 0.0, 1.0)
        )
        return frame

    def service_edges(self, frame: pd.DataFrame) -> pd.DataFrame:
        failing = self.d.magnitude * self._share_at(frame.index.to_numpy(dtype=np.float64))
        for caller, callee in self.edges:
            col = f"{caller}_{callee}"
            if col in frame:
                frame[col] = frame[col] * (1.0 - np.clip(failing * self.d.jitter(len(frame)), 0.0, 1.0))
        return frame
