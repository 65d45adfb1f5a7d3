"""ChangeRCA Online Boutique cases: per-pod per-call-edge metrics (1 min) and concurrent release plans.

- Entities: Online Boutique services; a pod `adservice-v2-fd6989b7c-6xff2` belongs to `adservice`
  (instance = the pod name, version `v2`).
- Window: what `source_success.csv.gz` covers, [first row, last row + 1 min).
- Topology: `dependency.csv.gz`; rows whose target is an IP address (pod -> node placement) are not
  calls and are dropped.
- Alert: the case's detection (index `alert` column `detected ...`, else the record's
  `detect_timestamp`) with the front end (`frontend`) as the symptom entity.
- Events: every release in the plan becomes DEPLOY events (a start event at `release_time` and one per
  rollout step at its completion time) with reference = the new version / replica-set id. All
  concurrent releases look alike; nothing says which one is defective.
- Metrics: per pod file `<pod>_<caller>_<callee>.csv.gz`: `success_rate{caller=..,callee=..}` (%),
  `latency{caller=..,callee=..}` (mean call latency, recorded in ms, converted to s — the unit is our
  reading of the values, the dataset does not state it), and per pod `cpu`, `memory_utilization`,
  `node_cpu`, `node_memory_utilization` (%). Service-level `source_success` / `destination_success`
  become `client_success_rate{...}` on the caller and `success_rate{...}` on the callee.

Answer isolation: the experiment record (`<case>.json`) also holds the answer (`fault`,
`fault_release_service`, `normal_service_list`, baseline `*_result`s). Only the whitelisted keys below
are copied out of it; the baselines' `gied*`, `microrca/`, `microscope/` files are never opened.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from rca.telemetry.model import (
    VERSIONED_POD,
    Alert,
    Conventions,
    DependencyGraph,
    Event,
    EventKind,
    edge_metric_name,
)
from rca.telemetry.recorded import CaseRef, RecordedCase, case_files, parse_alert_hint, reading, time_span
from rca.telemetry.recorded.source import ColumnSpec, RecordedSource, TableRecording, parse_go_times
from rca.telemetry.topology import graph_from_edges

FRONT_END = "frontend"
# Pods are named `<service>-v<n>-<replicaset>-<pod>`: the version a pod runs is in its name.
CONVENTIONS = Conventions(version_token=VERSIONED_POD)
STEP = 60.0
_IP = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_POD_FILE = re.compile(
    r"^(?P<pod>(?P<svc>[a-z0-9-]+?)-(?P<ver>v\d+)-[a-z0-9]+-[a-z0-9]+)_(?P<caller>[a-z0-9-]+)_(?P<callee>[a-z0-9-]+)\.csv\.gz$"
)
_SERVICE_TABLES = ("dependency.csv.gz", "source_success.csv.gz", "destination_success.csv.gz")
# Keys of the experiment record the engine may see; everything else stays unread.
RECORD_KEYS = (
    "plan",
    "before_change_list",
    "experiment_time",
    "experiemnt_end_time",
    "detect_time",
    "detect_timestamp",
)
PLAN_KEYS = ("release_time", "target_replica", "process")
STEP_KEYS = ("v1", "v2", "release_pod", "delete_pod", "release_complete_timestamp")

EDGE_METRICS = {"SuccessRate": ("success_rate", "%", 1.0), "Latency": ("latency", "s", 0.001)}
POD_METRICS = {
    "CPUUsageRate(%)": ("cpu", "%"),
    "MemoryUsageRate(%)": ("memory_utilization", "%"),
    "NodeCpuUsageRate(%)": ("node_cpu", "%"),
    "NodeMemoryUsageRate(%)": ("node_memory_utilization", "%"),
}


@dataclass(frozen=True)
class ReleaseStep:
    """One rollout step of a release plan."""

    completed_at: float
    old_replicas: int
    new_replicas: int
    released: tuple[str, ...]
    deleted: tuple[str, ...]


@dataclass(frozen=True)
class Release:
    """One service's release in the case's plan (no fault information)."""

    service: str
    release_time: float
    target_replicas: int
    steps: tuple[ReleaseStep, ...]


def _object(value: object, what: str) -> dict[str, Any]:
    """`value` when it is a JSON object, else TypeError naming `what`."""
    if not isinstance(value, dict):
        raise TypeError(f"{what} is not a JSON object")
    return value


def read_record(path: Path) -> dict[str, Any]:
    """The whitelisted part of a case's experiment record (answer keys are dropped on read).

    Raises `CaseFileError` naming the file when it is not JSON or its plan is not shaped as expected.
    """
    with reading(path):
        with open(path, encoding="utf-8") as fh:
            raw = _object(json.load(fh), "the record")
        record: dict[str, Any] = {k: raw[k] for k in RECORD_KEYS if k in raw}
        plan: dict[str, Any] = {}
        for svc, value in _object(raw.get("plan") or {}, "plan").items():
            entry = _object(value, f"plan.{svc}")
            process: dict[str, Any] = {}
            for t, item in _object(entry.get("process") or {}, f"plan.{svc}.process").items():
                step = _object(item, f"plan.{svc}.process.{t}")
                process[str(t)] = {k: step[k] for k in STEP_KEYS if k in step}
            plan[str(svc)] = {k: entry[k] for k in PLAN_KEYS if k in entry and k != "process"} | {
                "process": process
            }
        record["plan"] = plan
        del raw  # the full record (with its answer) goes no further than this function
    return record


def releases(record: Mapping[str, Any]) -> list[Release]:
    """The plan's releases, in service order."""
    out = []
    for svc, entry in sorted(record.get("plan", {}).items()):
        steps = []
        for step in entry.get("process", {}).values():
            steps.append(
                ReleaseStep(
                    completed_at=float(step.get("release_complete_timestamp", entry["release_time"])),
                    old_replicas=int(step.get("v1", 0)),
                    new_replicas=int(step.get("v2", 0)),
                    released=tuple(step.get("release_pod", ())),
                    deleted=tuple(step.get("delete_pod", ())),
                )
            )
        steps.sort(key=lambda s: s.completed_at)
        out.append(
            Release(svc, float(entry["release_time"]), int(entry.get("target_replica", 0)), tuple(steps))
        )
    return out


def _release_id(rel: Release) -> str:
    """New version + replica-set hash taken from the released pods, e.g. `v2-fd6989b7c`."""
    for step in rel.steps:
        for pod in step.released:
            m = re.match(rf"^{re.escape(rel.service)}-(v\d+-[a-z0-9]+)-[a-z0-9]+$", pod)
            if m:
                return m.group(1)
    return "v2"


def release_events(record: Mapping[str, Any]) -> list[Event]:
    """DEPLOY events for every release of the plan (start + each completed step)."""
    events: list[Event] = []
    for rel in releases(record):
        ref = _release_id(rel)
        events.append(
            Event(
                time=rel.release_time,
                entity=rel.service,
                kind=EventKind.DEPLOY,
                message=f"{rel.service}: rollout of {ref} started, target {rel.target_replicas} replicas",
                reference=ref,
                attributes={"phase": "start", "target_replicas": str(rel.target_replicas)},
            )
        )
        for step in rel.steps:
            events.append(
                Event(
                    time=step.completed_at,
                    entity=rel.service,
                    kind=EventKind.DEPLOY,
                    message=(
                        f"{rel.service}: rollout step of {ref} completed, {step.new_replicas} new / "
                        f"{step.old_replicas} old replicas; started {', '.join(step.released) or '-'}; "
                        f"removed {', '.join(step.deleted) or '-'}"
                    ),
                    reference=ref,
                    instance=step.released[0] if step.released else None,
                    attributes={
                        "phase": "step",
                        "new_replicas": str(step.new_replicas),
                        "old_replicas": str(step.old_replicas),
                    },
                )
            )
    return events


@lru_cache(maxsize=512)
def _read_table(path: str) -> pd.DataFrame:
    """A per-minute table indexed by unix seconds parsed from its `Time`/`time` string."""
    with reading(path):
        frame = pd.read_csv(path)
        col = "Time" if "Time" in frame.columns else "time"
        frame.index = pd.Index(parse_go_times(frame[col]))
        return frame


@lru_cache(maxsize=64)
def _read_dependency(path: str, services: tuple[str, ...]) -> DependencyGraph:
    with reading(path):
        dep = pd.read_csv(path)
        edges = [
            (str(s), str(t), float(w))
            for s, t, w in dep[["Source", "Target", "Weight"]].itertuples(index=False, name=None)
            if not _IP.match(str(t)) and not _IP.match(str(s))
        ]
    return graph_from_edges(edges, extra_entities=services)


def _case_dir(data_dir: Path, ref: CaseRef) -> Path:
    files = case_files(ref)
    if not files:
        raise ValueError(f"case {ref.case_id}: index `files` is empty")
    return data_dir / files[0].rstrip("/")


def load(data_dir: Path, ref: CaseRef) -> RecordedCase:
    """Load one ChangeRCA case (pod files are parsed when their service is queried)."""
    case_dir = _case_dir(data_dir, ref)
    record_path = case_dir / f"{case_dir.name}.json"
    record = read_record(record_path)
    names = sorted(os.listdir(case_dir))  # a listing, not a read: gied/ etc. stay unopened
    specs: list[ColumnSpec] = []
    pod_seen: set[str] = set()
    for fname in names:
        m = _POD_FILE.match(fname)
        if m is None:
            continue
        key = str(case_dir / fname)
        svc, pod, caller, callee = m.group("svc"), m.group("pod"), m.group("caller"), m.group("callee")
        for col, (base, unit, scale) in EDGE_METRICS.items():
            specs.append(
                ColumnSpec(svc, edge_metric_name(base, caller, callee), unit, key, col, col, pod, scale)
            )
        if pod not in pod_seen:  # pod-level metrics repeat in each of the pod's edge files
            pod_seen.add(pod)
            specs.extend(
                ColumnSpec(svc, name, unit, key, col, col, pod) for col, (name, unit) in POD_METRICS.items()
            )
    src_path, dst_path = case_dir / "source_success.csv.gz", case_dir / "destination_success.csv.gz"
    coverage = _read_table(str(src_path))
    for table, side in ((src_path, "client"), (dst_path, "server")):
        if not table.is_file():
            continue
        with reading(table), gzip.open(table, "rt") as fh:
            header = fh.readline().strip().split(",")
        for col in header:
            if "_" not in col or col in ("time", "timestamp"):
                continue
            caller, callee = col.split("_", 1)
            entity, base = (caller, "client_success_rate") if side == "client" else (callee, "success_rate")
            specs.append(
                ColumnSpec(entity, edge_metric_name(base, caller, callee), "%", str(table), col, col)
            )
    with reading(src_path):  # its rows are the case's coverage
        window = time_span(coverage.index, STEP)
    services = tuple(sorted({s.entity for s in specs}))
    dep_path = str(case_dir / "dependency.csv.gz")
    with reading(record_path):  # plan values of the wrong type (a list for a time, ...) are damage
        events = release_events(record)
    source = RecordedSource(
        name=ref.case_id,
        range=window,
        graph=lambda: _read_dependency(dep_path, services),
        recordings=[TableRecording(window, specs, lambda key: _read_table(key))],
        change_events=events,
        conventions=CONVENTIONS,
    )
    return RecordedCase(ref=ref, source=source, alert=_alert(ref, record, record_path), window=window)


def _alert(ref: CaseRef, record: Mapping[str, Any], record_path: Path) -> Alert:
    hint = parse_alert_hint(ref.alert_hint)
    if hint is not None:
        fired = hint.fired_at
    else:  # the record's detection time: its absence or junk there is a damaged record
        with reading(record_path):
            if "detect_timestamp" not in record:
                raise ValueError("no detection time in the index or the experiment record")
            fired = float(record["detect_timestamp"])
            if not math.isfinite(fired):
                raise ValueError(f"detect_timestamp {fired} is not a time")
    return Alert(
        name="incident detected",
        entity=FRONT_END,
        fired_at=fired,
        summary=f"{FRONT_END}: incident detected during concurrent rollouts",
        labels={"source": "case_detection"},
    )


__all__ = ["Release", "ReleaseStep", "load", "read_record", "release_events", "releases"]
