"""A `TelemetrySource` over recorded files, shared by every dataset loader.

Dataset loaders describe *where* the data is (which columns of which files hold which series, which
minute files hold logs and spans) and this module answers bounded queries, reading files only when a
query needs them. Parsed files are cached by the loaders (per path), so repeated queries are cheap and
cases that share a recording day share its parsed files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from rca.telemetry.model import (
    Conventions,
    DependencyGraph,
    Event,
    LogRecord,
    MetricSeries,
    Modality,
    Severity,
    Span,
    SpanKind,
    SpanStatus,
    TimeWindow,
)

# Column layout of the normalised frames that log / span loaders return.
LOG_COLUMNS = ("time", "entity", "instance", "severity", "body", "trace_id", "span_id")
LOG_TABLE_COLUMNS = ("time", "entity", "severity", "body", "trace_id", "span_id")  # `log_table`'s
SPAN_COLUMNS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "entity",
    "instance",
    "name",
    "start",
    "end",
    "kind",
    "status",
)


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """Where one metric series lives: a column of a file, and how to turn it into our vocabulary."""

    entity: str
    name: str  # normalised name, e.g. "latency_p90"
    unit: str
    file_key: str  # handed to the recording's reader
    column: str | tuple[str, ...]  # column of that file's frame
    original: str  # the dataset's own name, kept for traceability
    instance: str | None = None
    scale: float = 1.0  # multiply to reach `unit` (e.g. ms -> s = 0.001)


FrameReader = Callable[[str], pd.DataFrame]


class TableRecording:
    """A set of metric series stored as columns of one or more time-indexed tables.

    `read(file_key)` returns a frame whose index is unix seconds (float) and is only called when an
    entity of that file is queried; frames are cached here for the life of the recording.
    """

    def __init__(self, window: TimeWindow, specs: Iterable[ColumnSpec], read: FrameReader) -> None:
        self.window = window
        self._specs: dict[str, list[ColumnSpec]] = {}
        for spec in specs:
            self._specs.setdefault(spec.entity, []).append(spec)
        self._read = read
        self._frames: dict[str, pd.DataFrame] = {}
        self._series: dict[str, list[MetricSeries]] = {}

    def entities(self) -> list[str]:
        """Entities with at least one series in this recording (no file is read)."""
        return sorted(self._specs)

    def specs(self, entity: str) -> list[ColumnSpec]:
        """The column specs of `entity` (no file is read)."""
        return list(self._specs.get(entity, ()))

    def _frame(self, key: str) -> pd.DataFrame:
        if key not in self._frames:
            self._frames[key] = self._read(key)
        return self._frames[key]

    def load(self, entity: str) -> list[MetricSeries]:
        """All series of `entity`, clipped to the recording's window (cached)."""
        if entity not in self._series:
            out: list[MetricSeries] = []
            for spec in self._specs.get(entity, ()):
                frame = self._frame(spec.file_key)
                ts = frame.index.to_numpy(dtype=np.float64)
                if spec.column in frame.columns:
                    values = pd.to_numeric(frame[spec.column], errors="coerce").to_numpy(dtype=np.float64)
                else:  # keep one series per spec so callers can zip specs and series
                    values = np.full(ts.shape, np.nan)
                mask = (ts >= self.window.start) & (ts < self.window.end)
                out.append(
                    MetricSeries(
                        entity=spec.entity,
                        name=spec.name,
                        unit=spec.unit,
                        timestamps=ts[mask],
                        values=values[mask] * spec.scale,
                        instance=spec.instance,
                    )
                )
            self._series[entity] = out
        return self._series[entity]


FrameLoader = Callable[[TimeWindow], pd.DataFrame]


def empty_frame(columns: Sequence[str]) -> pd.DataFrame:
    """An empty frame with the given columns (what a loader returns when a window holds nothing)."""
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


# Enum members by value: looked up once per record, where calling the enum is measurably slower.
_SEVERITIES = {s.value: s for s in Severity}
_STATUSES = {s.value: s for s in SpanStatus}
_KINDS = {k.value: k for k in SpanKind}


def _none_if_missing(value: object) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value == "":
        return None
    return str(value)


def _optional(values: list[Any]) -> list[str | None]:
    """`_none_if_missing` of every value; a non-empty string (nearly every one) is kept without a call."""
    return [v if type(v) is str and v else _none_if_missing(v) for v in values]


@dataclass
class RecordedSource:
    """Bounded, lazy queries over one recorded case.

    Attributes:
        name: the case id, for messages.
        range: what the case's files cover (the source's `time_range`).
        graph: the topology, or a callable building it on first use.
        recordings: metric recordings; the first is the case itself, others (e.g. a separate normal
            recording) are read only when a query window overlaps them.
        log_loader / span_loader: return normalised frames (`LOG_COLUMNS` / `SPAN_COLUMNS`) for a window.
        baseline: where normal behaviour is recorded; None means "the part of `range` before onset".
        conventions: the identifier formats the dataset writes (statement ids, trace markers, versions).
    """

    name: str
    range: TimeWindow
    graph: DependencyGraph | Callable[[], DependencyGraph]
    recordings: Sequence[TableRecording] = ()
    log_loader: FrameLoader | None = None
    span_loader: FrameLoader | None = None
    change_events: Sequence[Event] = ()
    baseline: TimeWindow | None = None
    conventions: Conventions = field(default_factory=Conventions)
    _topology: DependencyGraph | None = field(default=None, init=False, repr=False)
    # The last log frame queried and its rows by entity: a tool asks for every entity's lines in one
    # window in turn, and the loaders hand back the same (cached) frame each time, so the frame is
    # split by entity once rather than scanned once per entity.
    _log_rows: tuple[pd.DataFrame, dict[str, npt.NDArray[np.intp]]] | None = field(
        default=None, init=False, repr=False
    )

    # --- TelemetrySource protocol -------------------------------------------------------------
    def modalities(self) -> frozenset[Modality]:
        """Which kinds of telemetry this case holds."""
        mods: set[Modality] = set()
        if self.recordings:
            mods.add(Modality.METRICS)
        if self.log_loader is not None:
            mods.add(Modality.LOGS)
        if self.span_loader is not None:
            mods.add(Modality.TRACES)
        if any(e.kind.is_change for e in self.change_events):
            mods.add(Modality.CHANGES)
        if any(not e.kind.is_change for e in self.change_events):
            mods.add(Modality.EVENTS)
        return frozenset(mods)

    def time_range(self) -> TimeWindow:
        """What the case's files cover."""
        return self.range

    def topology(self) -> DependencyGraph:
        """The service dependency graph (built once, on first use)."""
        if self._topology is None:
            self._topology = self.graph() if callable(self.graph) else self.graph
        return self._topology

    def baseline_window(self, onset: float) -> TimeWindow | None:
        """A separate normal recording when the case has one, else the recorded part before `onset`."""
        if self.baseline is not None:
            return self.baseline
        end = min(onset, self.range.end)
        if end <= self.range.start:
            return None
        return TimeWindow(self.range.start, end)

    def metric_names(self, entity: str) -> Sequence[str]:
        """Normalised metric names of `entity` (read from the layout, no file parsed)."""
        names: set[str] = set()
        for rec in self.recordings:
            names.update(s.name for s in rec.specs(entity))
        return sorted(names)

    def metrics(
        self, entity: str, window: TimeWindow, names: Iterable[str] | None = None
    ) -> list[MetricSeries]:
        """Non-empty series of `entity` inside `window`; `names` may be normalised or original names."""
        wanted = set(names) if names is not None else None
        out: list[MetricSeries] = []
        for rec in self.recordings:
            if not rec.window.overlaps(window):
                continue  # never read a recording the query does not touch
            specs = rec.specs(entity)
            if wanted is not None and not any(s.name in wanted or s.original in wanted for s in specs):
                continue
            for series, spec in zip(rec.load(entity), specs, strict=False):
                if wanted is not None and series.name not in wanted and spec.original not in wanted:
                    continue
                part = series.within(window)
                if len(part):
                    out.append(part)
        return out

    def _log_selection(
        self, entity: str, window: TimeWindow, pattern: str | None, limit: int
    ) -> pd.DataFrame:
        """The log rows `logs` returns, as a frame (`LOG_COLUMNS`), in its order."""
        if self.log_loader is None:
            return empty_frame(LOG_COLUMNS)
        frame = self.log_loader(window)
        if frame.empty:
            return empty_frame(LOG_COLUMNS)
        cached = self._log_rows
        if cached is None or cached[0] is not frame:
            groups = frame.groupby("entity", sort=False).indices
            cached = (frame, {str(e): np.asarray(at, dtype=np.intp) for e, at in groups.items()})
            self._log_rows = cached
        rows = cached[1].get(entity)
        if rows is None:
            return empty_frame(LOG_COLUMNS)
        sel = frame.take(rows)
        sel = sel[(sel["time"] >= window.start) & (sel["time"] < window.end)]
        if pattern is not None:
            sel = sel[sel["body"].str.contains(re.compile(pattern), na=False)]
        return sel.sort_values("time", kind="stable").head(limit)

    def logs(
        self, entity: str, window: TimeWindow, pattern: str | None = None, limit: int = 10_000
    ) -> list[LogRecord]:
        """Log records of `entity` inside `window`, optionally filtered by regex `pattern`."""
        sel = self._log_selection(entity, window, pattern, limit)
        if sel.empty:
            return []
        optional = {c: _optional(sel[c].tolist()) for c in ("instance", "trace_id", "span_id")}
        return [
            LogRecord(
                time=float(t),
                entity=str(e),
                severity=_SEVERITIES[str(sev)],
                body=str(body),
                trace_id=tid,
                span_id=sid,
                instance=inst,
            )
            for t, e, sev, body, inst, tid, sid in zip(
                *(sel[c].tolist() for c in ("time", "entity", "severity", "body")),
                *optional.values(),
                strict=True,
            )
        ]

    def log_table(self, entities: Sequence[str], window: TimeWindow, limit: int = 10_000) -> pd.DataFrame:
        """The fields of the records `logs` returns for each of `entities` in turn, as one frame (time,
        entity, severity, body, trace_id, span_id; missing ids None): no object per line."""
        parts = [p for p in (self._log_selection(e, window, None, limit) for e in entities) if not p.empty]
        if not parts:
            return empty_frame(LOG_TABLE_COLUMNS)
        sel = pd.concat(parts)
        return pd.DataFrame(
            {
                "time": sel["time"].to_numpy(dtype=np.float64),
                "entity": sel["entity"].astype(str).tolist(),
                "severity": sel["severity"].astype(str).tolist(),
                "body": sel["body"].astype(str).tolist(),
                "trace_id": _optional(sel["trace_id"].tolist()),
                "span_id": _optional(sel["span_id"].tolist()),
            }
        )

    def spans(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> list[Span]:
        """Spans starting inside `window`; with `entity`, every span of the traces that touch it."""
        sel = self.span_table(window, entity, limit)
        return [
            Span(
                trace_id=str(tid),
                span_id=str(sid),
                parent_span_id=pid,
                entity=str(ent),
                name=str(name),
                start=float(start),
                end=float(end),
                status=_STATUSES[str(status)],
                kind=_KINDS[str(kind)],
                instance=inst,
            )
            for tid, sid, pid, ent, inst, name, start, end, kind, status in zip(
                *(
                    _optional(sel[c].tolist()) if c in ("parent_span_id", "instance") else sel[c].tolist()
                    for c in SPAN_COLUMNS
                ),
                strict=True,
            )
        ]

    def events(self, window: TimeWindow, entity: str | None = None) -> list[Event]:
        """Recorded change / platform events inside `window` (about `entity` when given)."""
        return sorted(
            (
                e
                for e in self.change_events
                if window.contains(e.time) and (entity is None or e.entity == entity)
            ),
            key=lambda e: (e.time, e.entity),
        )

    # --- helpers beyond the protocol (used by loaders, tests and tools) ---------------------------
    def span_table(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> pd.DataFrame:
        """The rows (`SPAN_COLUMNS`) of the spans `spans` returns, in its order, as a frame: what a
        loader reads the whole case's spans with (a few hundred thousand objects cost seconds)."""
        if self.span_loader is None:
            return empty_frame(SPAN_COLUMNS)
        frame = self.span_loader(window)
        if frame.empty:
            return empty_frame(SPAN_COLUMNS)
        sel = frame[(frame["start"] >= window.start) & (frame["start"] < window.end)]
        if entity is not None:
            traces = sel.loc[sel["entity"] == entity, "trace_id"].unique()
            sel = sel[sel["trace_id"].isin(traces)]
        return sel.sort_values("start", kind="stable").head(limit)

    def metric_entities(self) -> list[str]:
        """Entities that have metric series in the case recording (no file parsed)."""
        return self.recordings[0].entities() if self.recordings else []

    def log_entities(self, window: TimeWindow | None = None) -> list[str]:
        """Entities with log records inside `window` (default: the whole case range)."""
        if self.log_loader is None:
            return []
        w = window or self.range
        frame = self.log_loader(w)
        if frame.empty:
            return []
        sel = frame[(frame["time"] >= w.start) & (frame["time"] < w.end)]
        return sorted(sel["entity"].dropna().unique().tolist())

    def span_entities(self, window: TimeWindow | None = None) -> list[str]:
        """Entities with spans inside `window` (default: the whole case range)."""
        if self.span_loader is None:
            return []
        w = window or self.range
        frame = self.span_loader(w)
        if frame.empty:
            return []
        sel = frame[(frame["start"] >= w.start) & (frame["start"] < w.end)]
        return sorted(sel["entity"].dropna().unique().tolist())


def parse_go_times(values: pd.Series) -> npt.NDArray[np.float64]:
    """Unix seconds from Go `time.Time` strings such as
    `2023-01-29 08:41:09.043078357 +0000 UTC m=+0.119240217` (the monotonic part is dropped).

    The datasets' `Time` strings are trusted over their numeric `TimeStamp` columns (Nezha's adservice
    file of 2022-08-22 has a TimeStamp off by ~2e8 s).
    """
    text = values.astype(str).str.split(" +", n=1, regex=False).str[0]
    try:  # the collectors' usual layout; an exact format is about twice as fast as ISO8601 inference
        stamps = pd.to_datetime(text, format="%Y-%m-%d %H:%M:%S.%f", utc=True)
    except ValueError:
        stamps = pd.to_datetime(text, format="ISO8601", utc=True)
    # pandas 3 infers the resolution from the text; pin nanoseconds before taking integers.
    return np.asarray(stamps.dt.as_unit("ns").astype("int64").to_numpy(), dtype=np.float64) / 1e9
