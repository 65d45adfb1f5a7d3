"""Nezha (TrainTicket, Online Boutique): faults injected into the day's fault-free metric rows and, for
TrainTicket, the fault-free `construct_data` logs and traces.

Normal period: the per-pod metric files cover the whole recording day, and the day's faults all lie
in its first hours (the index's injection times); the rows from `SETTLE` after the last injection to
the day's end are the normal metric period. TrainTicket's `construct_data/<day>/` holds its fault-free
logs and traces (about three minutes around the file's minute).

Each case gets a day of its own (`nezha/rca_data/<synthetic day>/`, days from `FIRST_DAY` on), as the
Nezha loader reads a day's folder: the normal rows are moved there by whole days, so times of day and
the collector's tick are kept, and only the rows around the case are written. TrainTicket's case
minutes are the three minute files of the dataset's layout (`HH_MM_log.csv.gz`, `HH_MM_trace.csv.gz`,
`HH_MM_traceid.csv.gz`), the onset inside the first, built from the construct data moved by whole
minutes (every clock in a row is moved: the columns and the log line's own clock). Each TrainTicket
case also has its own fault-free minutes, `construct_data/<synthetic day>/`, as the recorded days do;
they and the case minutes are independent bootstraps of the construct minute, so that the engine's
reference and incident are separate draws of normal behaviour. The loader's rule
finds TrainTicket's alert from the minute files, as for recorded cases; Online Boutique's index alert
is `detected T`, the shared rule's first firing on the front end rounded up to the minute plus one
minute, as the dataset's README defines it.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from functools import cache
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

from rca.evaluation.inject import (
    CPU_LATENCY_PER_CORE,
    MAGNITUDES,
    MEMORY_LATENCY_PER_FOOTPRINT,
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
    ramp_profile,
    rule_alert,
    step_profile,
    utc,
)
from rca.telemetry.cases import CaseRef, load_case, read_index
from rca.telemetry.model import Direction, TimeWindow
from rca.telemetry.recorded.alerting import Signal
from rca.telemetry.recorded.nezha import BASELINE_BEFORE, ENTRY, MINUTE, _day, service_of
from rca.telemetry.recorded.source import parse_go_times

# After the day's last injection the system is given this long to recover before rows count as normal
# (a Nezha fault lasts a few minutes; the case windows are three).
SETTLE = 30 * MINUTE
BEFORE = 45 * MINUTE  # rows written before the case (the loader's baseline reaches 30 minutes back)
AFTER = 25 * MINUTE  # and after it (the loader reads 10 minutes past the case)
FIRST_DAY = date(2100, 1, 1)  # synthetic days: far from any recording, one per case
SYSTEM_DAYS = {"TrainTicket": 0, "OnlineBoutique": 20_000}  # keeps the two systems' days apart
CASE_MINUTES = 3  # a Nezha case window is three minute files
# The case's own fault-free minutes (its `construct_data/<day>/` files) end this long before the first
# case minute: inside the loader's 30-minute baseline, and clear of the 10 minutes before the alert
# that the engine's incident window takes in. There are as many as the case has minutes, so that the
# reference holds as many records as the incident (a service that one request in ten reaches has a
# handful of spans a minute).
NORMAL_BEFORE = 20 * MINUTE
NORMAL_MINUTES = CASE_MINUTES
# Draws of a case's normal period until one whose own rows do not trip the alert rule: if half of a
# day's periods are quiet, 20 draws all fail once in a million cases.
QUIET_DRAWS = 20
SERVER_LATENCY = ("PodServerLatencyP90(s)", "PodServerLatencyP95(s)", "PodServerLatencyP99(s)")
CLIENT_LATENCY = ("PodClientLatencyP90(s)", "PodClientLatencyP95(s)", "PodClientLatencyP99(s)")
FRONT_LATENCY = ("LatencyP50(s)", "LatencyP90(s)", "LatencyP95(s)", "LatencyP99(s)")
FRONT_SIGNALS = (
    ("LatencyP50(s)", "latency_p50", Direction.UP),
    ("LatencyP90(s)", "latency_p90", Direction.UP),
    ("LatencyP99(s)", "latency_p99", Direction.UP),
    ("SuccessRate(%)", "success_rate", Direction.DOWN),
)
_IDS = re.compile(r"((?:TraceID|SpanID): )([0-9a-f]+)")
_LINE = re.compile(r"^(?P<clock>\d{2}:\d{2}:\d{2}\.\d{3})\s+(?P<level>[A-Z]+)\s+(?P<where>\S+)")


def carried(values: np.ndarray) -> bool:
    """Whether a recorded series carries a signal (a series recorded as all zeros is not measured)."""
    finite = values[np.isfinite(values)]
    return bool(finite.size) and float(np.median(np.abs(finite))) > 0.0


class NezhaInjector:
    """Faults on a Nezha system's metrics (and TrainTicket's logs and traces)."""

    dataset = "nezha"

    def __init__(self, data_dir: Path, system: str) -> None:
        self.name = system
        self.system = f"nezha-{''.join(c for c in system if c.isupper()).lower()}"
        self.entry = ENTRY[system]
        refs = [r for r in read_index(data_dir, split="dev", datasets=["nezha"]) if r.system == system]
        self.ready = bool(refs)
        if not refs:
            return
        self.day = sorted(_day(r) for r in refs)[0]
        day_refs = [r for r in refs if _day(r) == self.day]
        self.last_injection = max(_inject_time(data_dir, r) for r in day_refs)
        self.metric_dir = data_dir / "nezha" / "rca_data" / self.day / "metric"
        self.graph = digraph(load_case(data_dir, day_refs[0]).source.topology())
        self.construct = data_dir / "nezha" / "construct_data" / self.day
        self.pods = sorted(p.name[: -len("_metric.csv.gz")] for p in self.metric_dir.glob("*_metric.csv.gz"))
        self.has_traces = (self.construct / "trace").is_dir()

    # --- what can be injected ---------------------------------------------------------------------
    def kinds(self) -> tuple[Kind, ...]:
        """The fault kinds the system's recorded telemetry can show (none without its data)."""
        if not self.ready:
            return ()
        if self.has_traces:
            return (Kind.LATENCY, Kind.ERRORS, Kind.CPU, Kind.MEMORY, Kind.POD_FAILURE, Kind.NETWORK_DELAY)
        # Online Boutique's snapshot has metrics only, and no pod carries a success rate: an error
        # inside a service shows nowhere but at the front end, so `errors` is not injected there.
        return (Kind.LATENCY, Kind.CPU, Kind.MEMORY, Kind.POD_FAILURE, Kind.NETWORK_DELAY)

    def entities(self, kind: Kind) -> list[str]:
        """The entities a fault of `kind` can be injected into."""
        """Services with metrics the entry reaches; with traces, those the normal traces reach (a
        fault in a service no recorded request reaches shows in no trace or log)."""
        services = {service_of(p) for p in self.pods}
        if self.has_traces:
            return sorted(services & set(self._chains()))
        reach = {self.entry} | (nx.descendants(self.graph, self.entry) if self.entry in self.graph else set())
        return sorted(services & reach)

    @cache  # noqa: B019 - one injector per suite
    def _chains(self) -> dict[str, list[tuple[str, ...]]]:
        """Per service, the caller chains (nearest caller first, ending at the entry) its spans in the
        construct minute were reached by (the minute the case minutes are drawn from, not the stray
        seconds around it: a chain only they hold would never reach a case minute)."""
        spans = self._construct_minute().spans
        parent = dict(zip(spans["SpanID"], spans["ParentID"], strict=False))
        owner = dict(zip(spans["SpanID"], spans["PodName"].map(service_of), strict=False))
        chains: dict[str, set[tuple[str, ...]]] = {}
        for sid, ent in owner.items():
            chain = _chain(sid, parent, owner)
            if ent == self.entry and not chain:
                chains.setdefault(ent, set()).add(())
            elif chain and chain[-1] == self.entry:
                chains.setdefault(ent, set()).add(chain)
        return {e: sorted(c) for e, c in chains.items()}

    def _path(self, entity: str, rng: np.random.Generator) -> tuple[str, ...] | None:
        """The caller chain the fault travels: with traces, one the normal traces show (so the fault
        reaches recorded requests), drawn by the seed among the shortest; else a shortest call path."""
        if not self.has_traces:
            return injected_path(self.graph, entity, self.entry, rng)
        observed = self._chains().get(entity, [])
        if not observed:
            return None
        shortest = [c for c in observed if len(c) == min(len(x) for x in observed)]
        return (entity, *shortest[int(rng.integers(len(shortest)))])

    # --- reading ----------------------------------------------------------------------------------
    @cache  # noqa: B019 - one injector per suite; the files are the day's and read once
    def _table(self, path: str) -> pd.DataFrame:
        frame = pd.read_csv(path)
        frame["_t"] = parse_go_times(frame["Time" if "Time" in frame.columns else "time"])
        return frame

    def _normal_range(self) -> tuple[float, float]:
        front = self._table(str(self.metric_dir / "front_service.csv.gz"))
        return self.last_injection + SETTLE, float(front["_t"].max())

    # --- writing ----------------------------------------------------------------------------------
    def write(self, fault: Fault, out: Path) -> Written | Skipped:
        """Write the case of `fault` under `out`, unless its effect never trips the alert or the alert
        would fire as early without it."""
        d = draw(fault)
        path = self._path(fault.entity, d.rng)
        if path is None:
            return UNREACHABLE
        first, last = self._normal_range()
        front = self._table(str(self.metric_dir / "front_service.csv.gz"))
        tick = float(np.median(np.mod(front["_t"].to_numpy(dtype=np.float64), MINUTE)))
        number = SYSTEM_DAYS[self.name] + list(Kind).index(fault.kind) * 1000 + fault.number
        new_day = FIRST_DAY + timedelta(days=number)
        shift = (
            datetime(new_day.year, new_day.month, new_day.day, tzinfo=UTC) - _midnight(self.day)
        ).total_seconds()
        # An incident starts from a quiet system: the period is redrawn while its own rows trip the rule.
        for _ in range(QUIET_DRAWS):
            src_end = float(
                np.floor(d.rng.uniform(first + BEFORE + 2 * MINUTE, last - AFTER) / MINUTE) * MINUTE
            )
            minutes = [src_end + shift + k * MINUTE for k in range(CASE_MINUTES)]  # minute-file ends
            onset = minutes[0] - MINUTE + tick + float(d.rng.uniform(5.0, MINUTE - 5.0))
            keep = (src_end - BEFORE, src_end + AFTER)
            clean = self._window(self.metric_dir / "front_service.csv.gz", keep, shift)
            scan = self._scan(clean, minutes, onset, tick)
            if rule_alert(self._front_signals(clean, scan), scan) is None:
                break
        day = new_day.isoformat()
        pod = sorted(p for p in self.pods if service_of(p) == fault.entity)
        target_pod = pod[int(d.rng.integers(len(pod)))]
        share = float(d.rng.uniform(*MAGNITUDES[Kind.ERRORS]))  # callers' failing share (pod failure)
        spans, logs, normal_records, reached = None, None, None, None
        normal: list[float] = []
        if self.has_traces:
            pool = self._pool(path)
            reached = _reached(pool, path)
            spans, logs = self._minutes(pool, minutes, d)
            normal = [minutes[0] - NORMAL_BEFORE - k * MINUTE for k in reversed(range(NORMAL_MINUTES))]
            # Copies numbered after the case minutes' so that no copy's ids repeat one of theirs.
            normal_records = self._minutes(pool, normal, d, first_copy=len(minutes))
        added = self._added_latency(fault, d, target_pod, keep, spans)
        effects = _Effects(fault, d, path, target_pod, onset, added, share, reached, keep[1] + shift)

        frames = {
            name: effects.metrics(name, self._window(self.metric_dir / name, keep, shift))
            for name in [f"{p}_metric.csv.gz" for p in self.pods] + ["front_service.csv.gz"]
        }
        # The alert rule on the entry's symptom, as the loader applies it: a fault whose effect never
        # trips it makes no incident, and nothing of it is written.
        signals = self._front_signals(frames["front_service.csv.gz"], scan)
        fired = rule_alert(signals, scan)
        if fired is None:
            return NO_ALERT
        if not caused_by_fault(signals, self._front_signals(clean, scan), scan):
            return NOT_ITS_ALERT  # no quiet period was drawn, and the fault adds nothing to its alert

        metric_out = out / "nezha" / "rca_data" / day / "metric"
        metric_out.mkdir(parents=True, exist_ok=True)
        for name, frame in frames.items():
            _write_metric(frame, metric_out / name, self.day, day)
        for name in ("dependency.csv.gz", "source_50.csv.gz", "destination_50.csv.gz"):
            src = self.metric_dir / name
            if not src.is_file():
                continue
            if name == "dependency.csv.gz":
                (metric_out / name).write_bytes(src.read_bytes())
                continue
            frame = self._window(src, keep, shift)
            _write_metric(
                effects.edges(frame, name == "destination_50.csv.gz"), metric_out / name, self.day, day
            )

        files = [f"nezha/rca_data/{day}/metric/*"]
        alert = ""
        if spans is not None and logs is not None and normal_records is not None:
            self._write_minutes(out, "construct_data", day, normal, tick, *normal_records)
            spans, logs = effects.traces(spans, logs)
            self._write_minutes(out, "rca_data", day, minutes, tick, spans, logs)
            labels = ",".join(_hhmm(m) for m in minutes)
            files = [
                f"nezha/rca_data/{day}/metric/*",
                f"nezha/rca_data/{day}/{{log,trace,traceid}}/{{{labels}}}_*.csv.gz",
                f"normal: nezha/construct_data/{day}/",
            ]
        else:
            # `detected T`: the firing rounded up to the minute, plus the `for: 1m` minute (README).
            detected = float(np.ceil(fired.fired_at / MINUTE) * MINUTE) + MINUTE
            alert = f"detected {utc(detected)}"
        row = index_row(
            self.dataset,
            fault,
            self.name,
            onset,
            alert,
            "metrics(1-min)+logs+traces" if spans is not None else "metrics only (1-min)",
            "; ".join(files),
        )
        row["root_cause_detail"] = target_pod
        return Written(row, path)

    def _scan(self, front: pd.DataFrame, minutes: list[float], onset: float, tick: float) -> TimeWindow:
        """Where the alert rule looks for the case's alert."""
        if self.has_traces:  # the loader's rule over the case minutes, against the 30 minutes before
            return TimeWindow(minutes[0] - MINUTE + tick, minutes[-1] + tick)
        # Online Boutique: from the onset's row on, the rule that dates its `detected T`
        times = front["_t"].to_numpy(dtype=np.float64)
        return TimeWindow(
            float(times[times <= onset].max()) if (times <= onset).any() else float(times.min()),
            float(times.max()) + MINUTE,
        )

    def _front_signals(self, front: pd.DataFrame, scan: TimeWindow) -> list[Signal]:
        """The entry's symptom signals the shared rule reads inside `scan`, each against the
        `BASELINE_BEFORE` before it (the loader's baseline)."""
        times = front["_t"].to_numpy(dtype=np.float64)
        base = (times < scan.start) & (times >= scan.start - BASELINE_BEFORE)
        return [
            Signal(
                self.entry,
                metric,
                times,
                front[col].to_numpy(dtype=np.float64),
                front[col].to_numpy(dtype=np.float64)[base],
                direction,
            )
            for col, metric, direction in FRONT_SIGNALS
            if col in front
        ]

    def _window(self, path: Path, keep: tuple[float, float], shift: float) -> pd.DataFrame:
        frame = self._table(str(path))
        part = frame[(frame["_t"] >= keep[0]) & (frame["_t"] < keep[1])].copy()
        part["_t"] = part["_t"] + shift
        if "TimeStamp" in part:
            part["TimeStamp"] = part["TimeStamp"] + int(shift)
        if "timestamp" in part:
            part["timestamp"] = part["timestamp"] + int(shift)
        return part

    def _added_latency(
        self, fault: Fault, d: Draw, pod: str, keep: tuple[float, float], spans: pd.DataFrame | None
    ) -> float:
        """Seconds the fault adds to each request through the entity (and so to its callers')."""
        if fault.kind in (Kind.LATENCY, Kind.NETWORK_DELAY):
            return d.magnitude
        if fault.kind not in (Kind.CPU, Kind.MEMORY):
            return 0.0
        frame = self._table(str(self.metric_dir / f"{pod}_metric.csv.gz"))
        rows = frame[(frame["_t"] >= keep[0]) & (frame["_t"] < keep[1])]
        own = rows[SERVER_LATENCY[0]].to_numpy(dtype=np.float64)
        if carried(own):
            normal = float(np.nanmedian(own))
        elif spans is not None and (spans["entity"] == fault.entity).any():
            normal = float(np.median(spans.loc[spans["entity"] == fault.entity, "Duration"])) / 1e6
        else:
            normal = 0.0
        per_unit = CPU_LATENCY_PER_CORE if fault.kind is Kind.CPU else MEMORY_LATENCY_PER_FOOTPRINT
        return per_unit * d.magnitude * normal  # a leak's, at its full growth

    # --- TrainTicket logs and traces ---------------------------------------------------------------
    def _construct(self, kind: str) -> tuple[Path, float]:
        path = sorted((self.construct / kind).glob(f"*_{kind}.csv.gz"))[0]
        hh, mm = path.name.split("_")[:2]
        end = datetime.fromisoformat(f"{self.day} {hh}:{mm}:00").replace(tzinfo=UTC).timestamp()
        return path, end

    @cache  # noqa: B019 - one injector per suite; the construct minute is read once
    def _construct_minute(self) -> _Pool:
        """Whole traces of the construct file's own minute, with their logs, and the logs of no trace."""
        trace_path, end = self._construct("trace")
        log_path, _ = self._construct("log")
        front = self._table(str(self.metric_dir / "front_service.csv.gz"))
        tick = float(np.median(np.mod(front["_t"].to_numpy(dtype=np.float64), MINUTE)))
        spans = pd.read_csv(trace_path, dtype={"TraceID": str, "SpanID": str, "ParentID": str})
        logs = pd.read_csv(log_path, dtype={"TraceID": str, "SpanID": str})
        root_start = spans.groupby("TraceID")["StartTimeUnixNano"].transform("min") / 1e9
        spans = spans[(root_start >= end - MINUTE + tick) & (root_start < end + tick)]
        log_t = logs["TimeUnixNano"].astype(np.int64) / 1e9
        logs = logs[(log_t >= end - MINUTE + tick) & (log_t < end + tick)]
        traces = sorted(spans["TraceID"].unique())
        loose = np.flatnonzero(~logs["TraceID"].isin(traces).to_numpy())
        return _Pool(end, spans, logs, traces, loose, len(traces), len(loose))

    def _pool(self, path: tuple[str, ...]) -> _Pool:
        """The construct minute as a pool to draw case and normal minutes from, the traces that reach
        the entity by the injected path set apart (drawn at their recorded rate).

        Normal and case minutes are independent draws from the whole minute. Splitting its traces in
        two halves, one for each, was tried: a rare request type (a few traces a minute) then sits
        mostly in one half, and the bootstrap multiplies that accident across all three minutes (a
        code path broken in 22 of 22 units against 0 of 23, a service's own time moving), which the
        engine read, confidently, as a fault where none was injected."""
        minute = self._construct_minute()
        spans = minute.spans
        parent = dict(zip(spans["SpanID"], spans["ParentID"], strict=False))
        owner = dict(zip(spans["SpanID"], spans["PodName"].map(service_of), strict=False))
        on_path = {
            t
            for t, sid, ent in zip(
                spans["TraceID"], spans["SpanID"], spans["PodName"].map(service_of), strict=True
            )
            if ent == path[0] and _chain(sid, parent, owner) == path[1:]
        }
        return minute.stratified(on_path)

    def _minutes(
        self, pool: _Pool, minutes: list[float], d: Draw, first_copy: int = 0
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(spans, logs) of the minutes ending at `minutes`: each a bootstrap of `pool` to the construct
        minute's own volume (whole traces and logs of no trace drawn with replacement, ids made unique
        per copy and minute, `first_copy` numbering the first minute, every clock moved)."""
        spans, logs, traces = pool.spans, pool.logs, [*pool.on_path, *pool.traces]
        span_rows = {t: np.flatnonzero(spans["TraceID"].to_numpy() == t) for t in traces}
        log_ids = logs["TraceID"].to_numpy()
        log_rows = {t: np.flatnonzero(log_ids == t) for t in traces}
        span_parts, log_parts = [], []
        for k, minute_end in enumerate(minutes):
            move = minute_end - pool.end
            picks = pool.picks(d.rng)
            tags = [f"{first_copy + k:x}{j:05x}" for j in range(len(picks))]
            chosen = [traces[i] for i in picks]
            rows = np.concatenate([span_rows[t] for t in chosen]) if chosen else np.array([], dtype=int)
            span_tags = np.concatenate(
                [[tag] * len(span_rows[t]) for t, tag in zip(chosen, tags, strict=True)]
            )
            span_parts.append(_moved_spans(spans.iloc[rows], move, span_tags))
            lrows = [log_rows[t] for t in chosen]
            ltags: list[str] = [tag for r, tag in zip(lrows, tags, strict=True) for _ in range(len(r))]
            log_parts.append(
                _moved_logs(logs.iloc[np.concatenate(lrows)] if lrows else logs.iloc[:0], move, ltags)
            )
            loose = pool.loose
            if len(loose):
                loose = loose[d.rng.integers(len(loose), size=pool.loose_volume)]
            log_parts.append(_moved_logs(logs.iloc[loose], move, np.full(len(loose), "", dtype=object)))
        spans_out = pd.concat(span_parts, ignore_index=True)
        logs_out = pd.concat(log_parts, ignore_index=True)
        spans_out["entity"] = spans_out["PodName"].map(service_of)
        logs_out["entity"] = logs_out["PodName"].map(service_of)
        return spans_out, logs_out

    def _write_minutes(
        self,
        out: Path,
        folder: str,
        day: str,
        minutes: list[float],
        tick: float,
        spans: pd.DataFrame,
        logs: pd.DataFrame,
    ) -> None:
        """The minute files `HH_MM_{log,trace,traceid}.csv.gz` of `minutes` in `nezha/<folder>/<day>/`."""
        base = out / "nezha" / folder / day
        for sub in ("log", "trace", "traceid"):
            (base / sub).mkdir(parents=True, exist_ok=True)
        span_root_start = spans.groupby("TraceID")["StartTimeUnixNano"].transform("min") / 1e9
        log_t = logs["TimeUnixNano"] / 1e9
        for end in minutes:
            lo, hi = end - MINUTE + tick, end + tick
            label = _hhmm(end)
            sel = spans[(span_root_start >= lo) & (span_root_start < hi)].drop(columns=["entity"])
            sel.to_csv(base / "trace" / f"{label}_trace.csv.gz", index=False)
            logs[(log_t >= lo) & (log_t < hi)].drop(columns=["entity"]).to_csv(
                base / "log" / f"{label}_log.csv.gz", index=False
            )
            pd.Series(sel["TraceID"].unique()).to_csv(
                base / "traceid" / f"{label}_traceid.csv.gz", index=False, header=False
            )


@dataclass(frozen=True)
class _Pool:
    """Normal records to bootstrap minutes from: whole traces (spans and their logs) and logs of no
    trace, of the construct minute ending at `end`, drawn to that minute's own volume. The traces
    that reach the faulty entity by the injected path (`on_path`) are drawn apart, as many per minute
    as the recorded minute holds (the load generator's steady mix): with a handful of them, a free
    draw would often leave a minute, or the whole normal period, without the operation at all."""

    end: float
    spans: pd.DataFrame
    logs: pd.DataFrame
    traces: list[str]  # the traces not on the path
    loose: np.ndarray  # row positions in `logs` of the lines of no trace
    volume: int  # traces per minute, on the path or not
    loose_volume: int  # lines of no trace per minute
    on_path: list[str] = field(default_factory=list)
    on_path_volume: int = 0  # traces on the path per minute

    def stratified(self, on_path: set[str]) -> _Pool:
        """This pool with the traces in `on_path` drawn apart, at their count in the minute."""
        through = [t for t in self.traces if t in on_path]
        rest = [t for t in self.traces if t not in on_path]
        return replace(self, traces=rest, on_path=through, on_path_volume=len(through))

    def picks(self, rng: np.random.Generator) -> list[int]:
        """One minute's draw with replacement: indexes into `[*on_path, *traces]`."""
        n_path = self.on_path_volume if self.on_path else 0
        out = rng.integers(len(self.on_path), size=n_path).tolist() if n_path else []
        if self.traces:
            out += (len(self.on_path) + rng.integers(len(self.traces), size=self.volume - n_path)).tolist()
        return [int(i) for i in out]


@dataclass(frozen=True)
class Reached:
    """The share of each service's requests (and each call edge's calls) that took the injected caller
    chain, read off the construct minute's traces; 1 where unknown (no traces: every request)."""

    services: dict[str, float] = field(default_factory=dict)
    edges: dict[tuple[str, str], float] = field(default_factory=dict)

    def of(self, service: str) -> float:
        """The share of `service`'s requests on the chain."""
        return self.services.get(service, 1.0)

    def of_edge(self, caller: str, callee: str) -> float:
        """The share of the calls from `caller` to `callee` on the chain."""
        return self.edges.get((caller, callee), 1.0)


def _reached(pool: _Pool, path: tuple[str, ...]) -> Reached:
    """Per service of the path, the share of the traces it serves that are on the chain (each such
    trace is one of its requests that met the fault); per hop, the same share of the hop's calls."""
    spans = pool.spans
    entity = spans["PodName"].map(service_of)
    owner = dict(zip(spans["SpanID"], entity, strict=False))
    caller = spans["ParentID"].map(owner)
    on_path = set(pool.on_path)

    def share(traces: pd.Series) -> float:
        seen = set(traces)
        return len(seen & on_path) / len(seen) if seen else 1.0

    services = {s: share(spans.loc[entity == s, "TraceID"]) for s in path}
    edges = {
        (a, b): share(spans.loc[(entity == b) & (caller == a), "TraceID"])
        for b, a in itertools.pairwise(path)
    }
    return Reached(services, edges)


class _Effects:
    """One fault's effect on each kind of Nezha file (the physics: rca.evaluation.inject)."""

    def __init__(
        self,
        fault: Fault,
        d: Draw,
        path: tuple[str, ...],
        pod: str,
        onset: float,
        added: float,
        share: float,
        reached: Reached | None = None,
        leak_end: float | None = None,
    ) -> None:
        self.fault, self.d, self.path, self.pod, self.onset = fault, d, path, pod, onset
        self.added, self.share = added, share
        # A leak grows from onset to the end of the written rows (its full magnitude there).
        if fault.kind is Kind.MEMORY and leak_end is None:
            raise ValueError("a memory leak needs the end of the rows it grows over (leak_end)")
        self.leak_end = leak_end if leak_end is not None else onset
        self.callers = set(path[1:])
        # A fault in one operation on one caller chain (latency, errors) reaches only the requests
        # that took that chain: a service's metrics move by what that share of its requests shows.
        per_request = fault.kind in (Kind.LATENCY, Kind.ERRORS)
        self.reached = reached if reached is not None and per_request else Reached()

    def _profile(self, frame: pd.DataFrame) -> np.ndarray:
        return self._at(frame["_t"].to_numpy(dtype=np.float64))

    def _at(self, times: np.ndarray) -> np.ndarray:
        """The share of the fault's full effect at `times`: a step at onset, or a leak's growth."""
        if self.fault.kind is Kind.MEMORY:
            return ramp_profile(times, self.onset, self.leak_end)
        return step_profile(times, self.onset, MINUTE)

    def _add(self, frame: pd.DataFrame, columns: tuple[str, ...], amount: np.ndarray, reached: float) -> None:
        for col in columns:
            if col in frame and carried(frame[col].to_numpy(dtype=np.float64)):
                frame[col] = frame[col] + delayed_share(col, reached) * amount

    def _fail(self, frame: pd.DataFrame, column: str, share: np.ndarray) -> None:
        if column in frame and carried(frame[column].to_numpy(dtype=np.float64)):
            frame[column] = frame[column] * (1.0 - np.clip(share, 0.0, 1.0))

    def metrics(self, name: str, frame: pd.DataFrame) -> pd.DataFrame:
        kind, d, n = self.fault.kind, self.d, len(frame)
        profile = self._profile(frame)
        delay = self.added * profile * d.jitter(n)
        front = name == "front_service.csv.gz"
        pod = name[: -len("_metric.csv.gz")] if not front else ""
        service = service_of(pod) if pod else self.path[-1]
        failing = self.d.magnitude if kind is Kind.ERRORS else self.share if kind is Kind.POD_FAILURE else 0.0
        if pod == self.pod:
            if kind is Kind.CPU:
                usage = frame["CpuUsage(m)"].to_numpy(dtype=np.float64)
                rate = frame["CpuUsageRate(%)"].to_numpy(dtype=np.float64)
                per_milli = (
                    float(np.nanmedian(rate[usage > 0] / usage[usage > 0])) if (usage > 0).any() else 0.0
                )
                extra = d.magnitude * 1000.0 * profile * d.jitter(n)
                frame["CpuUsage(m)"] = usage + extra
                frame["CpuUsageRate(%)"] = rate + extra * per_milli
            if kind is Kind.MEMORY:
                for col in ("MemoryUsage(Mi)", "MemoryUsageRate(%)"):
                    base = float(np.nanmedian(frame[col].to_numpy(dtype=np.float64)))
                    frame[col] = frame[col] + d.magnitude * base * profile * d.jitter(n)  # the leak grows
            if kind is Kind.POD_FAILURE:
                return frame[frame["_t"] < self.onset]  # its telemetry stops
            if kind is Kind.NETWORK_DELAY:
                # As the recorded Online Boutique network delays show: the delayed pod's own latency
                # percentiles stay flat; the wire time shows on the call edges (`edges`).
                return frame
            own = self.reached.of(service)
            self._add(frame, SERVER_LATENCY, delay, own)
            self._fail(frame, "PodSuccessRate(%)", failing * own * profile)
        elif front or service in self.callers:
            share = self.reached.of(service)
            if front:
                self._add(frame, FRONT_LATENCY, delay, share)
                self._fail(frame, "SuccessRate(%)", failing * share * profile)
            else:
                self._add(frame, SERVER_LATENCY + CLIENT_LATENCY, delay, share)
                self._fail(frame, "PodSuccessRate(%)", failing * share * profile)
        return frame

    def edges(self, frame: pd.DataFrame, callee_side: bool = False) -> pd.DataFrame:
        """Per call-edge latency (the median of the edge's calls, as the caller measures it, or as the
        callee does with `callee_side`): each hop of the path waits the added time, on the share of
        the edge's calls that took the path. A network delay holds back what the entity sends, on
        every edge: its answers (each caller's side of its edge into it waits; the entity's own side
        does not see the wire) and its requests (its side of each edge out of it waits; the callee's
        does not)."""
        delay = self.added * self._profile(frame) * self.d.jitter(len(frame))
        network = self.fault.kind is Kind.NETWORK_DELAY
        if network and not callee_side:  # its answers reach every caller late, its requests every callee
            for col in [c for c in frame.columns if self.fault.entity in c.split("_", 1)]:
                frame[col] = frame[col] + delay
        for callee, caller in zip(self.path, self.path[1:], strict=False):
            if network and callee == self.fault.entity:
                continue  # the caller's side: above; its own side does not see the wire
            col = f"{caller}_{callee}"
            if col in frame:
                frame[col] = frame[col] + delayed_share("p50", self.reached.of_edge(caller, callee)) * delay
        return frame

    def traces(self, spans: pd.DataFrame, logs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Delay, fail or drop the entity's spans on the path's traces after onset; log in its style."""
        kind = self.fault.kind
        onset_ns = self.onset * 1e9
        parent = dict(zip(spans["SpanID"], spans["ParentID"], strict=False))
        owner = dict(zip(spans["SpanID"], spans["entity"], strict=False))
        if kind is Kind.NETWORK_DELAY:
            return self._late_on_the_wire(spans, parent, owner, onset_ns), logs
        # The fault acts once per request the entity serves: on its entry span (the one its caller's
        # span is the parent of), not again on each of its own nested spans (a controller, a repository,
        # a query inside one request), which would multiply the delay or the failing share per request
        # by the depth of its own code, beyond what its metrics show.
        hit = []
        for sid, ent, start in zip(spans["SpanID"], spans["entity"], spans["StartTimeUnixNano"], strict=True):
            if (
                ent == self.fault.entity
                and start >= onset_ns
                and owner.get(parent.get(sid, "")) != ent
                and _chain(sid, parent, owner) == self.path[1:]
            ):
                hit.append(sid)
        if not hit:
            return spans, logs
        if kind in (Kind.LATENCY, Kind.CPU, Kind.MEMORY) and self.added > 0:
            starts = spans.set_index("SpanID").loc[hit, "StartTimeUnixNano"].to_numpy(dtype=np.float64)
            spans = _delay(spans, hit, parent, self.added * self._at(starts / 1e9), self.d)
        elif kind in (Kind.ERRORS, Kind.POD_FAILURE):
            share = self.d.magnitude if kind is Kind.ERRORS else 1.0
            failing = [s for s in hit if self.d.rng.random() < share] or hit[:1]
            drop = _descendants(spans, failing) | (set(failing) if kind is Kind.POD_FAILURE else set())
            errors = self._error_logs(spans, logs, failing, kind)
            # The spans that never ran log nothing: the lines the failed request's code would have
            # written after the failure, in the entity and in the callees it no longer reaches, vanish.
            logs = pd.concat([logs[~logs["SpanID"].isin(drop)], errors], ignore_index=True)
            spans = spans[~spans["SpanID"].isin(drop)]
        if kind is Kind.POD_FAILURE:
            gone = (logs["entity"] == self.fault.entity) & (logs["TimeUnixNano"] >= onset_ns)
            logs = logs[~gone]
        return spans, logs

    def _late_on_the_wire(
        self, spans: pd.DataFrame, parent: dict[str, str], owner: dict[str, str], onset_ns: float
    ) -> pd.DataFrame:
        """A network delay on the entity: every packet it sends after onset is late, on every call,
        whichever chain it is on. Its answers reach each caller later (the caller's span of the call
        lasts longer, the entity's own span of serving it does not), and its requests reach each
        callee later (its own span of the call lasts longer, the callee's does not)."""
        entity = self.fault.entity
        late: list[str] = []
        for sid, ent, start in zip(spans["SpanID"], spans["entity"], spans["StartTimeUnixNano"], strict=True):
            up = parent.get(sid, "")
            if start < onset_ns or up not in owner or owner[up] == ent:
                continue  # only a call between two services crosses the wire
            if ent == entity or owner[up] == entity:
                late.append(up)  # the calling span: to the entity, or the entity's to another service
        if not late or self.added <= 0:
            return spans
        starts = spans.set_index("SpanID").loc[late, "StartTimeUnixNano"].to_numpy(dtype=np.float64)
        return _delay(spans, late, parent, self.added * self._at(starts / 1e9), self.d)

    def _error_logs(
        self, spans: pd.DataFrame, logs: pd.DataFrame, failing: list[str], kind: Kind
    ) -> pd.DataFrame:
        """The ERROR lines of the failed requests: one at the failing span (in the entity's own style)
        and one in each caller on the path, at its span nearest the failure (each service logs a failed
        request once, where the failure reached it, not once per span of its own code)."""
        by_id = spans.drop_duplicates("SpanID").set_index("SpanID")
        rows = []
        for sid in failing:
            current: str | None = sid
            logged: set[str] = set()
            while current is not None and current in by_id.index:
                span: pd.Series = by_id.loc[current]  # type: ignore[assignment]  # ids are unique
                ent = str(span["entity"])
                own = ent == self.fault.entity
                if (own and kind is Kind.POD_FAILURE) or ent in logged:
                    current = _up(by_id, current)
                    continue
                logged.add(ent)
                if own or ent in self.callers:
                    style = logs[logs["entity"] == ent]
                    if not style.empty:
                        text = (
                            "Exception while handling request" if own else "call to downstream service failed"
                        )
                        rows.append(_error_row(style.iloc[0], span, current, text))
                current = _up(by_id, current)
        return pd.DataFrame(rows, columns=logs.columns)


def _up(by_id: pd.DataFrame, sid: str) -> str | None:
    parent = str(by_id.at[sid, "ParentID"])
    return None if parent in ("root", "nan") else parent


def _chain(sid: str, parent: dict[str, str], owner: dict[str, str]) -> tuple[str, ...]:
    """The services above a span, nearest first, each once (the caller chain it was reached by)."""
    out: list[str] = []
    me = owner.get(sid)
    current = parent.get(sid)
    while current is not None and current != "root" and current in owner:
        ent = owner[current]
        if ent != me and (not out or out[-1] != ent):
            out.append(ent)
        current = parent.get(current)
    return tuple(out)


def _descendants(spans: pd.DataFrame, roots: list[str]) -> set[str]:
    children: dict[str, list[str]] = {}
    for sid, par in zip(spans["SpanID"], spans["ParentID"], strict=True):
        children.setdefault(str(par), []).append(str(sid))
    out: set[str] = set()
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in out:
                out.add(child)
                stack.append(child)
    return out


def _delay(
    spans: pd.DataFrame, hit: list[str], parent: dict[str, str], added: np.ndarray, d: Draw
) -> pd.DataFrame:
    """Each hit span ends later by its delay (`added`, in the order of `hit`); its ancestors end later
    by as much, and every span of the trace that started after the hit span ended is moved by it (the
    request waited)."""
    spans = spans.copy()
    start = spans["StartTimeUnixNano"].to_numpy(dtype=np.int64).copy()
    end = spans["EndTimeUnixNano"].to_numpy(dtype=np.int64).copy()
    index = {sid: i for i, sid in enumerate(spans["SpanID"])}
    trace = spans["TraceID"].to_numpy()
    for sid, amount in zip(hit, added, strict=True):
        i = index[sid]
        delay = int(max(0.0, float(amount) * float(d.jitter(1)[0])) * 1e9)
        old_end = end[i]
        later = (trace == trace[i]) & (start >= old_end)
        start[later] += delay
        end[later] += delay
        end[i] += delay
        current = parent.get(sid)
        while current is not None and current in index:
            j = index[current]
            end[j] = max(end[j] + delay, end[i])
            current = parent.get(current)
    spans["StartTimeUnixNano"] = start
    spans["EndTimeUnixNano"] = end
    spans["Duration"] = (end - start) // 1000
    return spans


def _error_row(style: pd.Series, span: pd.Series, sid: str, text: str) -> dict[str, object]:
    """A log row in the style of `style` (an INFO line of the same entity), at the span's end."""
    at = int(span["EndTimeUnixNano"])
    stamp = pd.Timestamp(at, unit="ns", tz="UTC")
    raw = json.loads(str(style["Log"]))
    line = str(raw.get("log", ""))
    m = _LINE.match(line)
    where = m.group("where") if m else "app"
    clock = _local_clock(line, str(style["Timestamp"]), at / 1e9)
    raw["log"] = (
        f"{clock} ERROR  {where} TraceID: {span['TraceID']} SpanID: {sid} [{span['OperationName']}][{text}]\n"
    )
    raw["time"] = stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "Timestamp": raw["time"],
        "TimeUnixNano": at,
        "Node": style["Node"],
        "PodName": span["PodName"],
        "Container": style["Container"],
        "TraceID": span["TraceID"],
        "SpanID": sid,
        "Log": json.dumps(raw),
        "entity": service_of(str(span["PodName"])),
    }


def _local_clock(line: str, stamp: str, at: float) -> str:
    """The clock a line of this style shows at `at`: its offset from UTC (from its own row) kept."""
    m = _LINE.match(line)
    when = datetime.fromtimestamp(at, tz=UTC)
    if m is None:
        return when.strftime("%H:%M:%S.%f")[:-3]
    shown = datetime.strptime(m.group("clock"), "%H:%M:%S.%f")
    utc_then = pd.Timestamp(stamp).tz_convert(None) if pd.Timestamp(stamp).tzinfo else pd.Timestamp(stamp)
    offset = round(((shown.hour - utc_then.hour) * 3600 + (shown.minute - utc_then.minute) * 60) / 3600) % 24
    return (when + timedelta(hours=offset)).strftime("%H:%M:%S.%f")[:-3]


def _moved_spans(spans: pd.DataFrame, move: float, tags: np.ndarray) -> pd.DataFrame:
    """Span rows moved by `move` seconds, each row's ids suffixed with its copy's tag."""
    out = spans.copy()
    shift = int(move * 1e9)
    out["StartTimeUnixNano"] = out["StartTimeUnixNano"].astype(np.int64) + shift
    out["EndTimeUnixNano"] = out["EndTimeUnixNano"].astype(np.int64) + shift
    tag = pd.Series(tags, index=out.index, dtype=object).astype(str)
    out["TraceID"] = out["TraceID"] + tag
    out["SpanID"] = out["SpanID"] + tag
    out["ParentID"] = out["ParentID"].where(out["ParentID"] == "root", out["ParentID"] + tag)
    return out


def _moved_logs(logs: pd.DataFrame, move: float, tags: np.ndarray | list[str]) -> pd.DataFrame:
    """Log rows moved by `move` seconds; their trace and span ids (columns and the ids the line
    itself prints) suffixed with each row's tag ("" for rows of no copied trace)."""
    out = logs.copy()
    out["TimeUnixNano"] = out["TimeUnixNano"].astype(np.int64) + int(move * 1e9)
    out["Timestamp"] = pd.to_datetime(out["TimeUnixNano"], unit="ns", utc=True).dt.strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )
    tag = pd.Series(list(tags), index=out.index, dtype=object).astype(str)
    for col in ("TraceID", "SpanID"):
        out[col] = out[col].where(out[col].isna(), out[col] + tag)
    out["Log"] = [
        _move_line(raw, move, stamp, t)
        for raw, stamp, t in zip(out["Log"], out["Timestamp"], tag, strict=True)
    ]
    return out


def _move_line(raw: str, move: float, stamp: str, tag: str = "") -> str:
    """A raw container log row moved in time: its `time` field, the clock its line starts with and
    the trace and span ids it prints (suffixed with `tag`)."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(parsed, dict):
        return raw
    line = str(parsed.get("log", ""))
    m = _LINE.match(line)
    if m is not None:
        clock = datetime.strptime(m.group("clock"), "%H:%M:%S.%f") + timedelta(seconds=move)
        line = clock.strftime("%H:%M:%S.%f")[:-3] + line[len(m.group("clock")) :]
    if tag:
        line = _IDS.sub(lambda x: f"{x.group(1)}{x.group(2)}{tag}", line)
    parsed["log"] = line
    parsed["time"] = stamp
    return json.dumps(parsed)


def _write_metric(frame: pd.DataFrame, path: Path, old_day: str, new_day: str) -> None:
    out = frame.drop(columns=["_t"])
    column = "Time" if "Time" in out else "time"
    out[column] = out[column].astype(str).str.replace(old_day, new_day, n=1, regex=False)
    out.to_csv(path, index=False)


def _midnight(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


def _hhmm(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%H_%M")


def _inject_time(data_dir: Path, ref: CaseRef) -> float:
    """A recorded case's injection time (the index's `inject_time_utc`, UTC)."""
    frame = pd.read_csv(data_dir / "cases_index.csv", usecols=["case_id", "inject_time_utc"], dtype=str)
    text = frame.loc[frame["case_id"] == ref.case_id, "inject_time_utc"].iloc[0]
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()
