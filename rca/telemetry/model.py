"""The incident telemetry model shared by recorded cases and live backends.

Entities are named by OpenTelemetry resource attributes: `service.name` is the key everywhere
(metrics, logs, spans, events, topology), with the pod / instance kept alongside where known, so
that a recorded case and a live backend look the same to the investigation engine.

Times are unix seconds as floats (UTC) throughout; sources convert at their edge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

# A series of one call edge names both ends: `latency{caller=a,callee=b}`. The recorded loaders write it,
# the metrics tool and the replay read it back.
_EDGE_NAME = re.compile(r"^(?P<base>[A-Za-z0-9_]+)\{caller=(?P<caller>[^,{}]+),callee=(?P<callee>[^,{}]+)\}$")


def edge_metric_name(base: str, caller: str, callee: str) -> str:
    """The name of the series `base` measures on the call edge caller -> callee."""
    return f"{base}{{caller={caller},callee={callee}}}"


def split_edge_name(name: str) -> tuple[str, str | None, str | None]:
    """`success_rate{caller=a,callee=b}` -> ("success_rate", "a", "b"); plain names -> (name, None, None)."""
    m = _EDGE_NAME.match(name)
    if m is None:
        return name, None, None
    return m["base"], m["caller"], m["callee"]


FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A closed-open time interval [start, end) in unix seconds."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"window end {self.end} is before its start {self.start}")

    @property
    def seconds(self) -> float:
        """Length of the window in seconds."""
        return self.end - self.start

    def contains(self, t: float) -> bool:
        """Whether `t` lies inside the window."""
        return self.start <= t < self.end

    def overlaps(self, other: TimeWindow) -> bool:
        """Whether the two windows share any instant."""
        return self.start < other.end and other.start < self.end


class Modality(StrEnum):
    """Kinds of telemetry a source can hold."""

    METRICS = "metrics"
    LOGS = "logs"
    TRACES = "traces"
    EVENTS = "events"
    CHANGES = "changes"


class Direction(StrEnum):
    """Which way a signal goes bad: latency and errors up, success rates down, some either way."""

    UP = "up"
    DOWN = "down"
    BOTH = "both"


class Severity(StrEnum):
    """Log severity, after OpenTelemetry's severity ranges (TRACE..FATAL)."""

    TRACE = "TRACE"
    DEBUG = "DEBUG"
    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"
    FATAL = "FATAL"

    @property
    def is_problem(self) -> bool:
        """WARN and above."""
        return self in (Severity.WARN, Severity.ERROR, Severity.FATAL)


class SpanKind(StrEnum):
    """OTLP span kinds."""

    UNSPECIFIED = "unspecified"
    INTERNAL = "internal"
    SERVER = "server"
    CLIENT = "client"
    PRODUCER = "producer"
    CONSUMER = "consumer"


class SpanStatus(StrEnum):
    """OTLP span status codes."""

    UNSET = "unset"
    OK = "ok"
    ERROR = "error"


class EventKind(StrEnum):
    """What happened to an entity: changes (deploys, config, commits) and platform events."""

    DEPLOY = "deploy"
    CONFIG_CHANGE = "config_change"
    COMMIT = "commit"
    PULL_REQUEST = "pull_request"
    SCALE = "scale"
    POD_RESTART = "pod_restart"
    K8S_WARNING = "k8s_warning"
    K8S_NORMAL = "k8s_normal"

    @property
    def is_change(self) -> bool:
        """Deploys, config changes, commits, PRs and scaling are changes a citation may name."""
        return self in (
            EventKind.DEPLOY,
            EventKind.CONFIG_CHANGE,
            EventKind.COMMIT,
            EventKind.PULL_REQUEST,
            EventKind.SCALE,
        )


@dataclass(frozen=True, slots=True)
class Entity:
    """A service identified by OpenTelemetry resource attributes."""

    name: str  # service.name
    namespace: str | None = None  # service.namespace / k8s.namespace.name
    kind: str = "service"  # service, database, queue, function, ... (where a dataset says)


@dataclass(frozen=True, slots=True)
class Edge:
    """caller -> callee with an optional call weight (count or rate)."""

    caller: str
    callee: str
    weight: float = 1.0


@dataclass(frozen=True)
class DependencyGraph:
    """The service dependency graph: callers point to callees."""

    entities: tuple[Entity, ...]
    edges: tuple[Edge, ...]
    origin: str = ""  # where the edges came from (a live source says which backend), "" when given

    def names(self) -> list[str]:
        """Entity names, in a stable order."""
        return [e.name for e in self.entities]

    def callees(self, name: str) -> list[str]:
        """Services that `name` calls."""
        return sorted({e.callee for e in self.edges if e.caller == name})

    def callers(self, name: str) -> list[str]:
        """Services that call `name`."""
        return sorted({e.caller for e in self.edges if e.callee == name})

    def has_edge(self, caller: str, callee: str) -> bool:
        """Whether caller calls callee."""
        return any(e.caller == caller and e.callee == callee for e in self.edges)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (stored with an investigation, so its graph can be redrawn and re-projected)."""
        return {
            "entities": [{"name": e.name, "namespace": e.namespace, "kind": e.kind} for e in self.entities],
            "edges": [{"caller": e.caller, "callee": e.callee, "weight": e.weight} for e in self.edges],
            **({"origin": self.origin} if self.origin else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DependencyGraph:
        """The inverse of `to_dict`."""
        return cls(
            entities=tuple(
                Entity(str(e["name"]), e.get("namespace"), str(e.get("kind") or "service"))
                for e in data.get("entities", ())
            ),
            edges=tuple(
                Edge(str(e["caller"]), str(e["callee"]), float(e.get("weight", 1.0)))
                for e in data.get("edges", ())
            ),
            origin=str(data.get("origin") or ""),
        )


@dataclass(frozen=True)
class MetricSeries:
    """One metric of one entity (optionally one instance/pod) over time."""

    entity: str
    name: str
    unit: str
    timestamps: FloatArray
    values: FloatArray
    instance: str | None = None  # pod or service.instance.id
    # Per point, the width of the interval the value is only known to lie in (a quantile read from a
    # histogram: the bucket it falls in); None when the values are measured as they are.
    resolution: FloatArray | None = None

    def __len__(self) -> int:
        return int(self.timestamps.shape[0])

    def within(self, window: TimeWindow) -> MetricSeries:
        """The points inside `window`."""
        mask = (self.timestamps >= window.start) & (self.timestamps < window.end)
        return MetricSeries(
            self.entity,
            self.name,
            self.unit,
            self.timestamps[mask],
            self.values[mask],
            self.instance,
            None if self.resolution is None else self.resolution[mask],
        )


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One log line, after the OpenTelemetry log data model."""

    time: float
    entity: str
    severity: Severity
    body: str
    trace_id: str | None = None
    span_id: str | None = None
    instance: str | None = None


@dataclass(frozen=True, slots=True)
class Span:
    """One span, after the OTLP trace data model."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    entity: str
    name: str
    start: float
    end: float
    status: SpanStatus = SpanStatus.UNSET
    kind: SpanKind = SpanKind.UNSPECIFIED
    attributes: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    instance: str | None = None

    @property
    def duration(self) -> float:
        """Span duration in seconds."""
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class OperationDurations:
    """One operation's spans inside a window as a metrics backend keeps them (the OpenTelemetry
    Collector's span metrics connector): how many ended, and their median duration. Durations include
    the time the operation waited on its callees; no span's own time is known without the spans."""

    entity: str
    operation: str
    spans: float
    median: float  # seconds


@dataclass(frozen=True, slots=True)
class Event:
    """A change or platform event about an entity (deploy, config change, commit, pod restart, ...)."""

    time: float
    entity: str
    kind: EventKind
    message: str
    reference: str | None = None  # commit sha, PR number, release / version id
    instance: str | None = None
    attributes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Alert:
    """The symptom that starts an investigation, as a real alert would carry it.

    `fired_at` is the alert's firing time (the onset hint); never an injection label.
    """

    name: str
    entity: str
    fired_at: float
    severity: str = "critical"
    metric: str | None = None
    summary: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)


# A log statement id as logback's `%logger#%line` writes it: a (dotted) logger name glued to a line number
# (`com.example.OrderService#88`), exactly one statement of the code.
LOGBACK_STATEMENT = r"(?<![\w.$])((?:[A-Za-z_$][\w$]*\.)*[A-Z][\w$]*#\d+)\b"
# A version token inside a Kubernetes pod name that carries its release (`<service>-v<n>-<hash>-<pod>`).
VERSIONED_POD = r"(?:^|-)v(\d+)(?:-|$)"


@dataclass(frozen=True)
class Conventions:
    """How a source writes the identifiers the tools recognise: declared by the source (a recorded
    loader from its dataset's format, a live source from its configuration), never assumed by a tool.

    Attributes:
        statement_id: a regex whose group 1 is a log statement id (e.g. `LOGBACK_STATEMENT`); None when
            log lines name no statement.
        trace_markers: labels written before a trace or span id inside a log body (`trace_id=`); a
            quoted template leaves them out.
        version_token: a regex whose group 1 is the version number inside an instance name (e.g.
            `VERSIONED_POD`); None when instance names carry no version.
    """

    statement_id: str | None = None
    trace_markers: tuple[str, ...] = ()
    version_token: str | None = None


class TelemetryError(RuntimeError):
    """A backend could not answer; the message names the backend and the reason."""

    def __init__(self, backend: str, reason: str) -> None:
        super().__init__(f"{backend}: {reason}")
        self.backend = backend
        self.reason = reason


@runtime_checkable
class TelemetrySource(Protocol):
    """Bounded queries over an incident's telemetry.

    Every query names an entity and/or a window so that the engine never loads more than it asks
    for. Live sources raise `TelemetryError` when a backend is unreachable; recorded sources never do.
    `conventions` declares the source's identifier formats.
    """

    conventions: Conventions

    def modalities(self) -> frozenset[Modality]:
        """Which kinds of telemetry this source can answer."""
        ...

    def time_range(self) -> TimeWindow:
        """The span of time the source holds data for (live sources: a recent horizon)."""
        ...

    def topology(self) -> DependencyGraph:
        """The service dependency graph."""
        ...

    def baseline_window(self, onset: float) -> TimeWindow | None:
        """Where normal behaviour before `onset` is recorded (None: none is known)."""
        ...

    def metric_names(self, entity: str) -> Sequence[str]:
        """Metrics available for `entity`."""
        ...

    def metrics(
        self, entity: str, window: TimeWindow, names: Iterable[str] | None = None
    ) -> list[MetricSeries]:
        """Metric series of `entity` inside `window` (all metrics, or those in `names`)."""
        ...

    def logs(
        self, entity: str, window: TimeWindow, pattern: str | None = None, limit: int = 10_000
    ) -> list[LogRecord]:
        """Log records of `entity` inside `window`, optionally filtered by a regex `pattern`."""
        ...

    def spans(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> list[Span]:
        """Spans inside `window` (of traces touching `entity` when given)."""
        ...

    def events(self, window: TimeWindow, entity: str | None = None) -> list[Event]:
        """Changes and platform events inside `window` (about `entity` when given)."""
        ...
