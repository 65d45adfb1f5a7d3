"""`LiveSource`: the TelemetrySource protocol over whichever live backends are configured.

The backends and the modality each serves are those of `rca.integrations.registry.TELEMETRY`; their
connectors raise `BackendError`, which this source hands on as the telemetry model's `TelemetryError`.
"""

from __future__ import annotations

import inspect
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Self, TypeVar, cast

import yaml

from rca.integrations.config import BackendConfig
from rca.integrations.http import BackendError, Credentials, HttpClient, RetryPolicy
from rca.integrations.kubernetes.connector import KubernetesConnector
from rca.integrations.prometheus.connector import DEFAULT_ENTITY_LABELS, PrometheusConnector
from rca.integrations.protocols import EventsConnector, LogsConnector, MetricsConnector, TracesConnector
from rca.integrations.registry import TELEMETRY, System
from rca.telemetry.model import (
    Conventions,
    DependencyGraph,
    Entity,
    Event,
    LogRecord,
    MetricSeries,
    Modality,
    OperationDurations,
    Span,
    TelemetryError,
    TimeWindow,
)
from rca.telemetry.topology import graph_from_edges, graph_from_spans

BACKENDS = tuple(system.name for system in TELEMETRY)
_SYSTEMS = {system.name: system for system in TELEMETRY}
_T = TypeVar("_T")


def backend_config(system: System, raw: Mapping[str, Any]) -> BackendConfig:
    """A backend's configuration from its settings mapping; options are checked against its connector."""
    assert system.connector is not None  # TELEMETRY holds connectors only
    config = cast(type[BackendConfig], system.config)
    accepted = set(inspect.signature(system.connector).parameters) - {"client"} - config.own_fields()
    return config.from_mapping(raw, accepted)


@dataclass(frozen=True)
class LiveConfig:
    """Which live backends to use and how; build it from Django settings with `from_mapping`."""

    backends: Mapping[str, BackendConfig] = field(default_factory=dict)  # by registry name
    timeout: float = 10.0  # seconds per request
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    horizon_seconds: float = 7 * 86_400  # what time_range() reports: a recent horizon
    recent_seconds: float = 1_800  # look-back for span-derived topology and metric names
    baseline_seconds: float = 3_600  # length of the baseline window
    # Between the baseline's end and the incident window's start. None by default: the incident window
    # already starts 10 minutes (EngineConfig.before_onset_s) before the onset hint, itself traced back to
    # when the alert's condition began to hold, and the recorded engine, whose z-scores the thresholds
    # were set on, reads the baseline up to that start. A 5-minute gap made the live baseline shorter
    # than the recorded one wherever history is short (a z of 29 instead of 6 on six points).
    baseline_gap_seconds: float = 0.0
    topology_edges: tuple[tuple[str, str, float], ...] = ()  # static caller -> callee edges
    topology_file: str = ""  # where the static edges came from (`ROOTLINE_TOPOLOGY_FILE`)

    def service_labels(self) -> tuple[str, ...]:
        """The labels that name a service (Prometheus's `entity_labels`, else the OTel/Kubernetes ones)."""
        prometheus = self.backends.get("prometheus")
        labels = prometheus.options.get("entity_labels") if prometheus is not None else None
        return tuple(labels) if labels else DEFAULT_ENTITY_LABELS

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> LiveConfig:
        """A LiveConfig from a plain mapping (e.g. `settings.ROOTLINE_LIVE_TELEMETRY`).

        Backends are sub-mappings keyed by name (`{"prometheus": {"url": ..., "token": ...}}`);
        one without a URL (GitHub defaults to api.github.com) is treated as not configured, so
        settings can read URLs from environment variables that may be empty. Unknown keys are an
        error: a misspelt setting should not silently disable a backend.
        """
        structured = {"backends", "retry", "topology_edges", "topology_file"}
        scalars = {f.name for f in fields(cls)} - structured
        unknown = sorted(set(raw) - scalars - set(BACKENDS) - structured)
        if unknown:
            raise ValueError(f"unknown live telemetry setting(s): {', '.join(unknown)}")
        kwargs: dict[str, Any] = {k: float(raw[k]) for k in scalars if raw.get(k) is not None}
        backends: dict[str, BackendConfig] = {}
        for system in TELEMETRY:
            sub = raw.get(system.name)
            if not sub:
                continue
            if not isinstance(sub, Mapping):
                raise ValueError(f"{system.name}: settings must be a mapping")
            config = backend_config(system, sub)
            if config.url:
                backends[system.name] = config
        if raw.get("retry"):
            try:
                kwargs["retry"] = RetryPolicy(**raw["retry"])
            except TypeError as exc:  # an unknown key: say so as a settings error
                raise ValueError(f"retry: {exc}") from exc
        edges = list(raw.get("topology_edges") or ())
        if raw.get("topology_file"):
            kwargs["topology_file"] = str(raw["topology_file"])
            edges.extend(read_topology_file(Path(kwargs["topology_file"])))
        kwargs["topology_edges"] = tuple(_edge(e) for e in edges)
        return cls(backends=backends, **kwargs)


def read_topology_file(path: Path) -> list[Any]:
    """The edges of a static topology file: YAML (or JSON) `edges: [[caller, callee(, weight)], ...]`
    or `[{caller, callee, weight}, ...]`, or that list alone."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"topology file {path}: {exc}") from exc
    edges = data.get("edges") if isinstance(data, Mapping) else data
    if not isinstance(edges, list):
        raise ValueError(f"topology file {path}: expected a list of edges or a mapping with `edges`")
    return edges


def _edge(raw: Any) -> tuple[str, str, float]:
    if isinstance(raw, Mapping):
        return str(raw["caller"]), str(raw["callee"]), float(raw.get("weight", 1.0))
    if isinstance(raw, Sequence) and not isinstance(raw, str) and len(raw) in (2, 3):
        return str(raw[0]), str(raw[1]), float(raw[2]) if len(raw) == 3 else 1.0
    raise ValueError(f"topology edge must be [caller, callee(, weight)] or a mapping, got {raw!r}")


class LiveSource:
    """TelemetrySource over live backends.

    A backend that is not configured contributes nothing (and its modality is absent); one that
    fails raises TelemetryError naming it, for the engine to record as an inconclusive result. It
    declares no identifier formats (`Conventions`): the tools assume none of a live system's.
    """

    conventions = Conventions()

    def __init__(
        self,
        config: LiveConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], float] = time.time,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.config = config
        self._now = now
        self._clients: list[HttpClient] = []
        self._topology: DependencyGraph | None = None
        self._by_name: dict[str, Any] = {}
        self._states: dict[str, str] = {}  # backends whose queries failed, with the reason
        self._prometheus_changes: bool | None = None  # whether Prometheus serves the change history
        self._present: float | None = None  # where the data ends (`present`)
        # Connectors by modality, in registry order (so Tempo serves traces before Jaeger).
        self._connectors: dict[Modality, list[Any]] = {}
        for system in TELEMETRY:
            cfg = config.backends.get(system.name)
            if cfg is None or system.connector is None or system.modality is None:
                continue
            client = HttpClient(
                system.name,
                cfg.url,
                credentials=Credentials(cfg.token, cfg.username, cfg.password),
                timeout=cfg.timeout or config.timeout,
                retry=config.retry,
                verify=cfg.verify,
                headers=cfg.headers,
                sleep=sleep,
                rng=rng,
            )
            self._clients.append(client)
            connector = system.connector(client, **cfg.connector_arguments())
            self._by_name[system.name] = connector
            self._connectors.setdefault(system.modality, []).append(connector)

    # --- lifecycle ---

    def close(self) -> None:
        """Close every backend client."""
        for client in self._clients:
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- connectors ---

    def _first(self, modality: Modality) -> Any:
        found = self._connectors.get(modality)
        return found[0] if found else None

    @property
    def _metrics(self) -> MetricsConnector | None:
        return cast(MetricsConnector | None, self._first(Modality.METRICS))

    @property
    def _logs(self) -> LogsConnector | None:
        return cast(LogsConnector | None, self._first(Modality.LOGS))

    @property
    def _prometheus(self) -> PrometheusConnector | None:
        """The metrics backend when it is Prometheus (what only Prometheus answers: alert conditions, span
        metrics, kube-state-metrics rollouts)."""
        metrics = self._metrics
        return metrics if isinstance(metrics, PrometheusConnector) else None

    @property
    def _traces(self) -> TracesConnector | None:
        return cast(TracesConnector | None, self._first(Modality.TRACES))

    def _events(self) -> list[EventsConnector]:
        found = [*self._connectors.get(Modality.EVENTS, []), *self._connectors.get(Modality.CHANGES, [])]
        return cast(list[EventsConnector], found)

    # --- TelemetrySource ---

    def modalities(self) -> frozenset[Modality]:
        """The modalities of the configured backends; the change history too when Prometheus serves it
        (`_rollouts_from_prometheus`)."""
        found = set(self._connectors)
        if self._rollouts_from_prometheus() is not None:
            found.add(Modality.CHANGES)
        return frozenset(found)

    def _rollouts_from_prometheus(self) -> PrometheusConnector | None:
        """Prometheus, when it is where the change history comes from: neither the Kubernetes API nor
        GitHub is configured, and it holds kube-state-metrics' ReplicaSet creation times (a rollout is a
        new ReplicaSet; asked once, over the horizon). A Prometheus that fails to answer serves none."""
        metrics = self._prometheus
        if metrics is None or {"kubernetes", "github"} & set(self._by_name):
            return None
        if self._prometheus_changes is None:
            self._prometheus_changes = bool(self._or_none(lambda: metrics.has_rollouts(self.time_range())))
        return metrics if self._prometheus_changes else None

    def time_range(self) -> TimeWindow:
        """A recent horizon ending at the present (live backends hold what their retention allows)."""
        now = self.present()
        return TimeWindow(now - self.config.horizon_seconds, now)

    def present(self) -> float:
        """Where the data ends: the wall clock, or Prometheus's newest scrape when that is older (asked
        once per investigation). After a stall (Prometheus restarted, its scrapes or a remote write behind)
        every query past the last scrape reads artefacts, not telemetry: a gauge's last value repeated for
        the lookback delta, the last scrape interval's rate again and again, so that an incident window
        ending at the wall clock would weigh the last minute more the later it is investigated."""
        if self._present is None:
            now = self._now()
            metrics = self._prometheus
            newest = None if metrics is None else self._or_none(lambda: metrics.newest_scrape(now))
            # one millisecond (Prometheus's resolution) past the scrape, so that the window, open at its
            # end, holds it
            self._present = now if newest is None else min(now, newest + 0.001)
        return self._present

    def topology(self) -> DependencyGraph:
        """The call graph, from the first source that gives edges (cached per source): recent spans of
        the traces backend, the service-graph metrics of Prometheus, the Kubernetes API's Services and
        the workloads that name them, then the static edges. Its `origin` says which was used; a source
        that fails is passed over (its state is in `backend_states`)."""
        if self._topology is None:
            self._topology = self._find_topology()
        return self._topology

    def _find_topology(self) -> DependencyGraph:
        recent = self._recent()
        traces, metrics = self._traces, self._metrics
        candidates: list[tuple[str, Callable[[], DependencyGraph]]] = []
        if traces is not None:
            candidates.append(
                (f"traces ({self._name_of(traces)})", lambda: graph_from_spans(self.spans(recent)))
            )
        if metrics is not None:
            candidates.append(
                (
                    "service-graph metrics (prometheus)",
                    lambda: graph_from_edges(self._edges(lambda: metrics.service_graph(recent))),
                )
            )
        kubernetes = self._by_name.get("kubernetes")
        if isinstance(kubernetes, KubernetesConnector):
            candidates.append(
                (
                    "Kubernetes Services' selectors (kubernetes)",
                    lambda: graph_from_edges(self._edges(kubernetes.service_edges)),
                )
            )
        if self.config.topology_edges:
            where = self.config.topology_file or "settings"
            candidates.append(
                (f"static file ({where})", lambda: graph_from_edges(self.config.topology_edges))
            )
        for origin, build in candidates:
            try:
                graph = build()
            except TelemetryError as exc:
                self._states[exc.backend] = f"unreachable: {exc.reason}"
                continue
            if graph.edges:
                return replace(self._with_idle_services(graph, recent), origin=origin)
        return DependencyGraph(entities=(), edges=(), origin="none")

    def _with_idle_services(self, graph: DependencyGraph, recent: TimeWindow) -> DependencyGraph:
        """`graph` with the services running beside its own that no call in it names (the metrics
        backend's `services`), as a recording's graph holds every service it measured; unchanged when
        the backend cannot say."""
        metrics = self._metrics
        if metrics is None:
            return graph
        known = set(graph.names())
        idle = self._or_none(lambda: [s for s in metrics.services(recent, known) if s not in known])
        if not idle:
            return graph
        entities = sorted((*graph.entities, *(Entity(name) for name in idle)), key=lambda e: e.name)
        return replace(graph, entities=tuple(entities))

    def _edges(self, read: Callable[[], list[tuple[str, str, float]]]) -> list[tuple[str, str, float]]:
        """A backend's caller -> callee edges, its failure as the telemetry model's error."""
        with self._telemetry_errors():
            return read()

    def _name_of(self, connector: object) -> str:
        return next(name for name, c in self._by_name.items() if c is connector)

    def backend_states(self) -> dict[str, str]:
        """Each live backend's state: `not configured`, `configured`, or `unreachable: <reason>` once a
        query to it failed."""
        return {
            name: self._states.get(name, "configured" if name in self._by_name else "not configured")
            for name in BACKENDS
        }

    def baseline_window(self, onset: float) -> TimeWindow | None:
        """`baseline_seconds` ending `baseline_gap_seconds` before `onset`."""
        end = onset - self.config.baseline_gap_seconds
        return TimeWindow(end - self.config.baseline_seconds, end)

    def condition_since(self, expr: str, labels: Mapping[str, str], at: float) -> float | None:
        """When an alert's condition began to hold up to `at`, by its rule's expression over Prometheus
        (None without Prometheus, when it does not hold, or when Prometheus fails: its state says so)."""
        metrics = self._prometheus
        return None if metrics is None else self._or_none(lambda: metrics.condition_since(expr, labels, at))

    def metric_names(self, entity: str) -> Sequence[str]:
        """Metrics the metrics backend has for `entity` recently (none without one)."""
        metrics = self._metrics
        with self._telemetry_errors():
            return metrics.metric_names(entity, self._recent()) if metrics else []

    def metrics(
        self, entity: str, window: TimeWindow, names: Iterable[str] | None = None
    ) -> list[MetricSeries]:
        """Metric series of `entity` inside `window`."""
        metrics = self._metrics
        with self._telemetry_errors():
            return metrics.metrics(entity, window, names) if metrics else []

    def logs(
        self, entity: str, window: TimeWindow, pattern: str | None = None, limit: int = 10_000
    ) -> list[LogRecord]:
        """Log records of `entity` inside `window`."""
        logs = self._logs
        with self._telemetry_errors():
            return logs.logs(entity, window, pattern, limit) if logs else []

    def spans(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> list[Span]:
        """Spans inside `window`, from the first configured traces backend (Tempo, else Jaeger)."""
        traces = self._traces
        with self._telemetry_errors():
            return traces.spans(window, entity, limit) if traces else []

    def span_coverage(self, window: TimeWindow, step: float) -> list[tuple[float, str]]:
        """When Prometheus's span metrics counted each service's spans inside `window`, per `step` (none
        without Prometheus): where spans are kept only as metrics, the stretches they describe."""
        metrics = self._prometheus
        with self._telemetry_errors():
            return metrics.span_coverage(window, step) if metrics else []

    def operation_durations(self, window: TimeWindow) -> list[OperationDurations]:
        """Each operation's span count and median duration inside `window`, from Prometheus's span
        metrics (none without Prometheus)."""
        metrics = self._prometheus
        with self._telemetry_errors():
            return metrics.operation_durations(window) if metrics else []

    def events(self, window: TimeWindow, entity: str | None = None) -> list[Event]:
        """Kubernetes events and GitHub changes inside `window`, or without either the rollouts Prometheus
        holds (kube-state-metrics' new ReplicaSets), in time order."""
        out: list[Event] = []
        prometheus = self._rollouts_from_prometheus()
        with self._telemetry_errors():
            for connector in self._events():
                out.extend(connector.events(window, entity))
            if prometheus is not None:
                out.extend(prometheus.rollouts(window, entity))
        return sorted(out, key=lambda e: (e.time, e.entity, e.kind))

    def _recent(self) -> TimeWindow:
        now = self.present()
        return TimeWindow(now - self.config.recent_seconds, now)

    def _or_none(self, ask: Callable[[], _T | None]) -> _T | None:
        """`ask()`, or None when its backend fails (the failure is kept as the backend's state)."""
        try:
            with self._telemetry_errors():
                return ask()
        except TelemetryError:
            return None

    @contextmanager
    def _telemetry_errors(self) -> Iterator[None]:
        """A backend's failure, as the telemetry model's error the engine records as inconclusive (and
        as the backend's state)."""
        try:
            yield
        except BackendError as exc:
            self._states[exc.backend] = f"unreachable: {exc.reason}"
            raise TelemetryError(exc.backend, exc.reason) from exc
