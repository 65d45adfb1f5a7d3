"""Nezha cases: TrainTicket (metrics + logs + traces) and Online Boutique (metrics only).

- Entities: a pod `ts-contacts-service-866bd68c97-xcqfx` belongs to service `ts-contacts-service`
  (the pod name minus its two hash suffixes); the pod is kept as `instance`.
- Recorded window (TrainTicket): the minute files named in the index `files` column. A file `HH_MM`
  holds the minute *ending* at HH:MM, aligned on the metric collector's tick (e.g. 08:42:09-08:43:08),
  so the window is [first HH_MM - 60 s + tick, last HH_MM + tick). The metric range around it is
  [window - 30 min, window + 10 min] (the 30 minutes before are the alert baseline); per-pod files
  cover the whole day and are parsed once per file (cached across the cases of a day).
- Recorded window (Online Boutique): the index names only the day's metric files (logs and traces
  are absent from the snapshot); its `alert` column gives the detection time T (`detected T`: a
  1-minute metric rule with `for: 1m`, so the fault began in the minute before the condition first
  held, one minute before T). The case is bounded by T as TrainTicket's by its three minute files:
  the three 1-minute rows up to T, i.e. the minutes ending at T - 2 min, T - 1 min and T (for a TT
  case the same three minutes, by the same rule, as its files). Without a hint the window is the
  whole day's metric coverage.
- Topology: OB `dependency.csv.gz` (IP targets dropped); TT from the spans of the case minutes and of
  the fault-free `construct_data` minute (`graph_from_span_table`), plus every service that has metrics.
- Alert: the shared rule (`alerting.py`) on the front end's `front_service.csv` latency percentiles
  (and success rate), attached to the entry service (TT `ts-gateway-service`, the root of every
  trace; OB `frontend`); baseline = the 30 minutes before the window (OB: the day's first 10 minutes).
- Logs: body = the JSON `log` field; severity from the level token (INFO/WARN/ERROR...); trace and
  span ids from the columns. Spans: no status in the data (UNSET); kind derived from structure (root
  or parent in another service -> SERVER, a child in another service -> CLIENT, else INTERNAL).
- Times: the `Time` strings are used, never the `TimeStamp` column (off by ~2e8 s for one OB file).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from rca.telemetry.model import (
    LOGBACK_STATEMENT,
    Alert,
    Conventions,
    DependencyGraph,
    Direction,
    Severity,
    SpanKind,
    SpanStatus,
    TimeWindow,
    edge_metric_name,
)
from rca.telemetry.recorded import CaseRef, RecordedCase, case_files, parse_alert_hint, reading, time_span
from rca.telemetry.recorded.alerting import Signal, detect_alert
from rca.telemetry.recorded.source import (
    LOG_COLUMNS,
    SPAN_COLUMNS,
    ColumnSpec,
    RecordedSource,
    TableRecording,
    empty_frame,
    parse_go_times,
)
from rca.telemetry.topology import graph_from_edges, graph_from_span_table

MINUTE = 60.0
BASELINE_BEFORE = 30 * MINUTE
AFTER = 10 * MINUTE
OB_WARMUP = 10 * MINUTE
ENTRY = {"TrainTicket": "ts-gateway-service", "OnlineBoutique": "frontend"}
# The services log through logback with `%logger#%line`, followed by the request's `TraceID: <id>
# SpanID: <id>` (the log format of the recorded applications).
CONVENTIONS = Conventions(statement_id=LOGBACK_STATEMENT, trace_markers=("TraceID:", "SpanID:"))
_IP = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_MINUTE_FILE = re.compile(r"(?P<kind>log|trace)/(?P<hh>\d{2})_(?P<mm>\d{2})_(?:log|trace)\.csv\.gz$")
_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})")
_LEVEL = re.compile(r"\b(TRACE|DEBUG|INFO|WARNING|WARN|ERROR|SEVERE|FATAL|CRITICAL)\b")
_LEVELS = {
    "TRACE": Severity.TRACE,
    "DEBUG": Severity.DEBUG,
    "INFO": Severity.INFO,
    "WARN": Severity.WARN,
    "WARNING": Severity.WARN,
    "ERROR": Severity.ERROR,
    "SEVERE": Severity.ERROR,
    "FATAL": Severity.FATAL,
    "CRITICAL": Severity.FATAL,
}

# per-pod metric columns -> (normalised name, unit, scale)
POD_METRICS: dict[str, tuple[str, str, float]] = {
    "CpuUsage(m)": ("cpu_millicores", "m", 1.0),
    "CpuUsageRate(%)": ("cpu", "%", 1.0),
    "MemoryUsage(Mi)": ("memory", "bytes", float(2**20)),
    "MemoryUsageRate(%)": ("memory_utilization", "%", 1.0),
    "SyscallRead": ("syscall_read", "count", 1.0),
    "SyscallWrite": ("syscall_write", "count", 1.0),
    "NetworkReceiveBytes": ("network_rx_bytes", "bytes/s", 1.0),
    "NetworkTransmitBytes": ("network_tx_bytes", "bytes/s", 1.0),
    "PodClientLatencyP90(s)": ("client_latency_p90", "s", 1.0),
    "PodClientLatencyP95(s)": ("client_latency_p95", "s", 1.0),
    "PodClientLatencyP99(s)": ("client_latency_p99", "s", 1.0),
    "PodServerLatencyP90(s)": ("latency_p90", "s", 1.0),
    "PodServerLatencyP95(s)": ("latency_p95", "s", 1.0),
    "PodServerLatencyP99(s)": ("latency_p99", "s", 1.0),
    "PodWorkload(Ops)": ("requests", "ops/s", 1.0),
    "PodSuccessRate(%)": ("success_rate", "%", 1.0),
    "NodeCpuUsageRate(%)": ("node_cpu", "%", 1.0),
    "NodeMemoryUsageRate(%)": ("node_memory_utilization", "%", 1.0),
    "NodeNetworkReceiveBytes": ("node_network_rx_bytes", "bytes/s", 1.0),
}
# front_service.csv (service-level, what the user sees) -> (name, unit); instance None
FRONT_METRICS: dict[str, tuple[str, str]] = {
    "SuccessRate(%)": ("success_rate", "%"),
    "LatencyP50(s)": ("latency_p50", "s"),
    "LatencyP90(s)": ("latency_p90", "s"),
    "LatencyP95(s)": ("latency_p95", "s"),
    "LatencyP99(s)": ("latency_p99", "s"),
}
ALERT_SIGNALS = (
    ("latency_p50", Direction.UP),
    ("latency_p90", Direction.UP),
    ("latency_p99", Direction.UP),
    ("success_rate", Direction.DOWN),
)


def service_of(pod: str) -> str:
    """`ts-contacts-service-866bd68c97-xcqfx` -> `ts-contacts-service` (drop the two hash suffixes)."""
    parts = pod.rsplit("-", 2)
    return parts[0] if len(parts) == 3 else pod


# --- cached file parsing (per path, shared by the cases of a day) ------------------------------
@lru_cache(maxsize=256)
def _read_metric_table(path: str) -> pd.DataFrame:
    with reading(path):
        frame = pd.read_csv(path)
        frame.index = pd.Index(parse_go_times(frame["Time" if "Time" in frame.columns else "time"]))
        return frame.sort_index()


def _severity(body: str) -> str:
    m = _LEVEL.search(body[:64])  # the level sits right after the clock in these Java/Go lines
    return (_LEVELS[m.group(1)] if m else Severity.INFO).value


def _body(raw: object) -> str:
    text = str(raw)
    try:
        parsed = json.loads(text)
    except ValueError:
        return text.rstrip("\n")
    if isinstance(parsed, dict) and "log" in parsed:
        return str(parsed["log"]).rstrip("\n")
    return text.rstrip("\n")


def _read_log_table(path: str) -> pd.DataFrame:
    # One 2023-01-29 file (10_06) has a row with broken quoting; it is skipped (1 of ~2,100 rows),
    # which keeps the fast parser and every well-formed row.
    return pd.read_csv(path, dtype={"TraceID": str, "SpanID": str, "PodName": str}, on_bad_lines="skip")


def _log_times(raw: pd.DataFrame) -> pd.Series:
    """Seconds since the epoch of every log row: `TimeUnixNano`, or where it overflowed (some rows
    hold a negative number, i.e. the year 1754) the `Timestamp` string (UTC); NaN where neither reads."""
    nanos = pd.to_numeric(raw["TimeUnixNano"], errors="coerce")
    time = nanos.astype(np.float64) / 1e9
    bad = ~(nanos > 0)
    if bad.any() and "Timestamp" in raw:
        stamps = pd.to_datetime(raw.loc[bad, "Timestamp"], utc=True, errors="coerce", format="ISO8601")
        time[bad] = (stamps - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    return time


@lru_cache(maxsize=512)
def _read_logs(path: str) -> pd.DataFrame:
    with reading(path):
        # A row without a pod belongs to no entity: skipped like a malformed row (none in the data).
        raw = _read_log_table(path).dropna(subset=["PodName"])
        if raw.empty:
            return empty_frame(LOG_COLUMNS)
        time = _log_times(raw)
        raw, time = raw[time.notna()], time[time.notna()]
        body = raw["Log"].map(_body)
        return pd.DataFrame(
            {
                "time": time,
                "entity": raw["PodName"].map(service_of),
                "instance": raw["PodName"],
                "severity": body.map(_severity),
                "body": body,
                "trace_id": raw["TraceID"].where(raw["TraceID"].notna(), None),
                "span_id": raw["SpanID"].where(raw["SpanID"].notna(), None),
            }
        )


@lru_cache(maxsize=512)
def _read_spans(path: str) -> pd.DataFrame:
    with reading(path):
        raw = pd.read_csv(
            path, dtype={"TraceID": str, "SpanID": str, "ParentID": str, "PodName": str}, on_bad_lines="skip"
        )
        # A span without an id, a trace or a pod cannot be placed: skipped like a malformed row.
        raw = raw.dropna(subset=["TraceID", "SpanID", "PodName"])
        if raw.empty:
            return empty_frame(SPAN_COLUMNS)
        parent = raw["ParentID"].where(raw["ParentID"].notna() & (raw["ParentID"] != "root"), None)
        return pd.DataFrame(
            {
                "trace_id": raw["TraceID"],
                "span_id": raw["SpanID"],
                "parent_span_id": parent,
                "entity": raw["PodName"].map(service_of),
                "instance": raw["PodName"],
                "name": raw["OperationName"].astype(str),
                "start": raw["StartTimeUnixNano"].astype(np.float64) / 1e9,
                "end": raw["EndTimeUnixNano"].astype(np.float64) / 1e9,
                "kind": SpanKind.UNSPECIFIED.value,
                "status": SpanStatus.UNSET.value,  # Nezha spans carry no status
            }
        )


def _derive_kinds(frame: pd.DataFrame) -> pd.DataFrame:
    """Span kinds from structure: root or parent in another service -> SERVER; child elsewhere -> CLIENT."""
    owner = dict(zip(frame["span_id"], frame["entity"], strict=False))
    parent_entity = frame["parent_span_id"].map(owner)
    remote_parents = set(
        frame.loc[parent_entity.notna() & (parent_entity != frame["entity"]), "parent_span_id"]
    )
    kind = np.full(len(frame), SpanKind.UNSPECIFIED.value, dtype=object)
    same = parent_entity.notna() & (parent_entity == frame["entity"])
    kind[same.to_numpy()] = SpanKind.INTERNAL.value
    kind[frame["span_id"].isin(remote_parents).to_numpy()] = SpanKind.CLIENT.value
    server = frame["parent_span_id"].isna() | (parent_entity.notna() & (parent_entity != frame["entity"]))
    kind[server.to_numpy()] = SpanKind.SERVER.value
    out = frame.copy()
    out["kind"] = kind
    return out


class MinuteFiles:
    """Log or trace minute files of a case, read only when a query window touches their minute."""

    def __init__(
        self,
        files: dict[float, Path],
        tick: float,
        read: Callable[[str], pd.DataFrame],
        columns: tuple[str, ...],
    ) -> None:
        self.files = dict(sorted(files.items()))  # minute end (HH:MM as unix s) -> path
        self.tick = tick
        self._read = read
        self._columns = columns
        self._joined: dict[tuple[str, ...], pd.DataFrame] = {}

    def covered(self, end: float) -> TimeWindow:
        """The interval held by the file named for minute `end` (small margin for clock skew)."""
        return TimeWindow(end - MINUTE + self.tick - 5.0, end + self.tick + 5.0)

    def __call__(self, window: TimeWindow) -> pd.DataFrame:
        """The rows of the minute files that cover `window`."""
        keys = tuple(str(p) for end, p in self.files.items() if self.covered(end).overlaps(window))
        if not keys:
            return empty_frame(self._columns)
        if keys not in self._joined:
            frame = pd.concat([self._read(k) for k in keys], ignore_index=True)
            if self._columns == SPAN_COLUMNS:
                frame = _derive_kinds(frame.drop_duplicates("span_id"))
            self._joined[keys] = frame
        return self._joined[keys]


def _day(ref: CaseRef) -> str:
    for entry in ref.files:
        m = _DAY.search(entry)
        if m:
            return m.group(1)
    raise ValueError(f"case {ref.case_id}: no recording day in the index `files` column")


_STAR = re.compile(r"/(?P<kind>log|trace|traceid)/(?P<hhmm>\d{2}_\d{2})_\*(?P<ext>\.csv\.gz)$")


def _nezha_files(ref: CaseRef) -> list[str]:
    """The case's files with `HH_MM_*.csv.gz` written out (`*` is the folder's kind: log, trace, ...)."""
    return [
        _STAR.sub(lambda m: f"/{m['kind']}/{m['hhmm']}_{m['kind']}{m['ext']}", p) for p in case_files(ref)
    ]


def _minute_end(day: str, hh: str, mm: str) -> float:
    return datetime.fromisoformat(f"{day} {hh}:{mm}:00").replace(tzinfo=UTC).timestamp()


def _minute_files(data_dir: Path, ref: CaseRef, day: str) -> tuple[dict[float, Path], dict[float, Path]]:
    """(log files, trace files) by minute end: the case's files plus any listed normal folder."""
    logs: dict[float, Path] = {}
    traces: dict[float, Path] = {}
    paths = [p for p in _nezha_files(ref) if "*" not in p]
    for folder in [p for p in paths if p.endswith("/")]:
        for sub in ("log", "trace"):
            d = data_dir / folder / sub
            if d.is_dir():
                paths.extend(f"{folder}{sub}/{n}" for n in sorted(os.listdir(d)))
    for rel in paths:
        m = _MINUTE_FILE.search(rel)
        if m is None or not (data_dir / rel).is_file():
            continue
        target = logs if m.group("kind") == "log" else traces
        target.setdefault(_minute_end(day, m.group("hh"), m.group("mm")), data_dir / rel)
    return logs, traces


def _case_minutes(ref: CaseRef, day: str) -> list[float]:
    """Minute ends of the case's own (non-normal) log/trace files."""
    ends = set()
    for rel in _nezha_files(ref):
        m = _MINUTE_FILE.search(rel)
        if m and "construct_data" not in rel:
            ends.add(_minute_end(day, m.group("hh"), m.group("mm")))
    return sorted(ends)


@lru_cache(maxsize=16)
def _metric_layout(metric_dir: str) -> tuple[tuple[str, str], ...]:
    """(pod, path) of every per-pod metric file of a day (a directory listing, no parsing)."""
    out = []
    for name in sorted(os.listdir(metric_dir)):
        if name.endswith("_metric.csv.gz"):
            out.append((name[: -len("_metric.csv.gz")], str(Path(metric_dir) / name)))
    return tuple(out)


def _edge_specs(metric_dir: Path) -> list[ColumnSpec]:
    specs: list[ColumnSpec] = []
    for fname, base, side in (
        ("source_50.csv.gz", "client_latency_p50", "caller"),
        ("destination_50.csv.gz", "latency_p50", "callee"),
    ):
        path = metric_dir / fname
        if not path.is_file():
            continue
        with reading(path):
            header = pd.read_csv(path, nrows=0).columns
        for col in header:
            if col in ("time", "timestamp") or "_" not in col:
                continue
            caller, callee = col.split("_", 1)
            entity = caller if side == "caller" else callee
            specs.append(ColumnSpec(entity, edge_metric_name(base, caller, callee), "s", str(path), col, col))
    return specs


def load(data_dir: Path, ref: CaseRef) -> RecordedCase:
    """Load one Nezha case; metric, log and trace files are parsed only when queried."""
    day = _day(ref)
    metric_dir = data_dir / "nezha" / "rca_data" / day / "metric"
    if not metric_dir.is_dir():
        raise FileNotFoundError(f"case {ref.case_id}: metric folder {metric_dir} not found")
    entry = ENTRY.get(ref.system, "frontend")
    specs: list[ColumnSpec] = []
    for pod, path in _metric_layout(str(metric_dir)):
        svc = service_of(pod)
        specs.extend(ColumnSpec(svc, n, u, path, col, col, pod, k) for col, (n, u, k) in POD_METRICS.items())
    front_path = metric_dir / "front_service.csv.gz"
    front = _read_metric_table(str(front_path)) if front_path.is_file() else None
    if front is not None:
        specs.extend(
            ColumnSpec(entry, n, u, str(front_path), col, col) for col, (n, u) in FRONT_METRICS.items()
        )
    specs.extend(_edge_specs(metric_dir))

    minutes = _case_minutes(ref, day) or _alert_minutes(ref)
    if front is None and not minutes:
        raise ValueError(f"case {ref.case_id}: no minute files and no front_service.csv to bound the case")
    with reading(front_path):  # the front end's times bound the case
        window, metric_range, tick = _bounds(front, minutes)

    log_files, trace_files = _minute_files(data_dir, ref, day)
    services = sorted({s.entity for s in specs})
    span_loader = MinuteFiles(trace_files, tick, _read_spans, SPAN_COLUMNS) if trace_files else None
    log_loader = MinuteFiles(log_files, tick, _read_logs, LOG_COLUMNS) if log_files else None
    dep_path = metric_dir / "dependency.csv.gz"

    def topology() -> DependencyGraph:
        if dep_path.is_file():
            with reading(dep_path):
                dep = pd.read_csv(dep_path)
                edges = [
                    (str(s), str(t), float(w))
                    for s, t, w in dep[["Source", "Target", "Weight"]].itertuples(index=False, name=None)
                    if not _IP.match(str(t)) and not _IP.match(str(s))
                ]
            return graph_from_edges(edges, extra_entities=services)
        if span_loader is not None:
            every = TimeWindow(min(span_loader.files) - 2 * MINUTE, max(span_loader.files) + MINUTE)
            return graph_from_span_table(source.span_table(every), extra_entities=services)
        return graph_from_edges((), extra_entities=services)

    source = RecordedSource(
        name=ref.case_id,
        range=metric_range,
        graph=topology,
        recordings=[TableRecording(metric_range, specs, _read_metric_table)],
        log_loader=log_loader,
        span_loader=span_loader,
        conventions=CONVENTIONS,
    )
    alert = _alert(ref, source, window, entry, bool(minutes))
    return RecordedCase(ref=ref, source=source, alert=alert, window=window)


# A `for: 1m` rule on 1-minute rows fires at T when the condition held at T - 1 min; the fault began
# in the row before that: the alert minute and the two before it hold the onset.
ALERT_MINUTES = 3


def _alert_minutes(ref: CaseRef) -> list[float]:
    """Minute ends bounding a case that has no minute files of its own, from its index alert time."""
    hint = parse_alert_hint(ref.alert_hint)
    if hint is None:
        return []
    end = hint.fired_at - hint.fired_at % MINUTE  # the alert rule evaluates on whole minutes
    return [end - k * MINUTE for k in reversed(range(ALERT_MINUTES))]


def _bounds(front: pd.DataFrame | None, minutes: list[float]) -> tuple[TimeWindow, TimeWindow, float]:
    """(case window, metric range, collector tick) from the front-end table and the case minutes.

    ValueError when the front-end table has no row (or rows of another day than the minutes).
    """
    day = time_span(front.index, MINUTE) if front is not None else None
    # The collector's tick inside each minute aligns the minute files with the metric rows.
    tick = (
        float(np.median(np.mod(front.index.to_numpy(dtype=np.float64), MINUTE))) if front is not None else 0.0
    )
    if not minutes:
        if day is None:
            raise ValueError("no minute files and no front_service.csv to bound the case")
        return day, day, tick
    window = TimeWindow(minutes[0] - MINUTE + tick, minutes[-1] + tick)
    day_start = day.start if day is not None else window.start - BASELINE_BEFORE
    day_end = day.end if day is not None else window.end + AFTER
    around = TimeWindow(max(day_start, window.start - BASELINE_BEFORE), min(day_end, window.end + AFTER))
    return window, TimeWindow(min(around.start, window.start), max(around.end, window.end)), tick


def _alert(ref: CaseRef, source: RecordedSource, window: TimeWindow, entry: str, has_minutes: bool) -> Alert:
    hint = parse_alert_hint(ref.alert_hint)
    if hint is not None:
        entity = hint.entity or entry
        return Alert(
            name=f"{entity} {hint.metric or 'anomaly'}",
            entity=entity,
            fired_at=hint.fired_at,
            metric=hint.metric,
            summary=f"{entity}: alert from the case index",
            labels={"source": "case_index"},
        )
    if has_minutes:
        base = TimeWindow(max(source.range.start, window.start - BASELINE_BEFORE), window.start)
        scan = window
    else:  # whole-day OB window: the first minutes are the only "before"
        base = TimeWindow(window.start, min(window.end, window.start + OB_WARMUP))
        scan = TimeWindow(base.end, window.end)
    signals = []
    for name, direction in ALERT_SIGNALS:
        cur = [s for s in source.metrics(entry, scan, [name]) if s.instance is None]
        ref_points = [s for s in source.metrics(entry, base, [name]) if s.instance is None]
        if cur:
            signals.append(
                Signal(
                    entry,
                    name,
                    cur[0].timestamps,
                    cur[0].values,
                    ref_points[0].values if ref_points else np.array([]),
                    direction,
                )
            )
    return detect_alert(signals, scan, name=f"{entry} front-end anomaly", fallback_entity=entry)
