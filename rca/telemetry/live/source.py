"""`LiveSource`: the TelemetrySource protocol over whichever live backends are configured."""

from __future__ import annotations

import inspect
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Self

from rca.telemetry.live.github import GITHUB_HEADERS, GitHubConnector
from rca.telemetry.live.http import BackendClient, Credentials, RetryPolicy
from rca.telemetry.live.jaeger import JaegerConnector
from rca.telemetry.live.kubernetes import KubernetesConnector
from rca.telemetry.live.loki import LokiConnector
from rca.telemetry.live.prometheus import PrometheusConnector
from rca.telemetry.live.tempo import TempoConnector
from rca.telemetry.model import (
    Conventions,
    DependencyGraph,
    Event,
    LogRecord,
    MetricSeries,
    Modality,
    Span,
    TimeWindow,
)
from rca.telemetry.topology import graph_from_edges, graph_from_spans

BACKENDS = ("prometheus", "loki", "tempo", "jaeger", "kubernetes", "github")
_CONNECTORS: dict[str, type] = {
    "prometheus": PrometheusConnector,
    "loki": LokiConnector,
    "tempo": TempoConnector,
    "jaeger": JaegerConnector,
    "kubernetes": KubernetesConnector,
    "github": GitHubConnector,
}
_CONNECTION_KEYS = frozenset({"url", "token", "username", "password", "timeout", "verify", "ca_cert"})
_DEFAULT_URLS = {"github": "https://api.github.com"}


@dataclass(frozen=True)
class BackendConfig:
    """Where one backend lives and how to authenticate; `options` go to its connector."""

    url: str
    token: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float | None = None  # None: the LiveConfig default
    verify: bool | str = True  # False, True, or a CA bundle path (in-cluster Kubernetes)
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, backend: str, raw: Mapping[str, Any]) -> BackendConfig:
        """Split a settings mapping into connection fields and validated connector options."""
        options = {k: v for k, v in raw.items() if k not in _CONNECTION_KEYS}
        accepted = set(inspect.signature(_CONNECTORS[backend]).parameters) - {"client"}
        unknown = sorted(set(options) - accepted)
        if unknown:
            raise ValueError(
                f"{backend}: unknown setting(s) {', '.join(unknown)}; "
                f"expected {', '.join(sorted(_CONNECTION_KEYS | accepted))}"
            )
        return cls(
            url=str(raw.get("url") or _DEFAULT_URLS.get(backend, "")),
            token=raw.get("token") or None,
            username=raw.get("username") or None,
            password=raw.get("password") or None,
            timeout=float(raw["timeout"]) if raw.get("timeout") is not None else None,
            verify=raw.get("ca_cert") or raw.get("verify", True),
            options=options,
        )


@dataclass(frozen=True)
class LiveConfig:
    """Which live backends to use and how; build it from Django settings with `from_mapping`."""

    prometheus: BackendConfig | None = None
    loki: BackendConfig | None = None
    tempo: BackendConfig | None = None
    jaeger: BackendConfig | None = None
    kubernetes: BackendConfig | None = None
    github: BackendConfig | None = None
    timeout: float = 10.0  # seconds per request
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    horizon_seconds: float = 7 * 86_400  # what time_range() reports: a recent horizon
    recent_seconds: float = 1_800  # look-back for span-derived topology and metric names
    baseline_seconds: float = 3_600  # length of the baseline window
    # The onset hint is the alert's firing time, which lags the real onset by the rule's `for:`
    # duration; leaving a gap keeps the first minutes of the fault out of the baseline.
    baseline_gap_seconds: float = 300
    topology_edges: tuple[tuple[str, str, float], ...] = ()  # static caller -> callee edges

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> LiveConfig:
        """A LiveConfig from a plain mapping (e.g. `settings.ROOTLINE_LIVE_TELEMETRY`).

        Backends are sub-mappings keyed by name (`{"prometheus": {"url": ..., "token": ...}}`);
        one without a URL (GitHub defaults to api.github.com) is treated as not configured, so
        settings can read URLs from environment variables that may be empty. Unknown keys are an
        error: a misspelt setting should not silently disable a backend.
        """
        scalars = {f.name for f in fields(cls)} - set(BACKENDS) - {"retry", "topology_edges"}
        unknown = sorted(set(raw) - scalars - set(BACKENDS) - {"retry", "topology_edges"})
        if unknown:
            raise ValueError(f"unknown live telemetry setting(s): {', '.join(unknown)}")
        kwargs: dict[str, Any] = {k: float(raw[k]) for k in scalars if raw.get(k) is not None}
        for backend in BACKENDS:
            sub = raw.get(backend)
            if not sub:
                continue
            if not isinstance(sub, Mapping):
                raise ValueError(f"{backend}: settings must be a mapping")
            backend_config = BackendConfig.from_mapping(backend, sub)
            if backend_config.url:
                kwargs[backend] = backend_config
        if raw.get("retry"):
            try:
                kwargs["retry"] = RetryPolicy(**raw["retry"])
            except TypeError as exc:  # an unknown key: say so as a settings error
                raise ValueError(f"retry: {exc}") from exc
        kwargs["topology_edges"] = tuple(_edge(e) for e in raw.get("topology_edges") or ())
        return cls(**kwargs)


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
        self._clients: list[BackendClient] = []
        self._topology: DependencyGraph | None = None

        def client(
            backend: str, cfg: BackendConfig, headers: Mapping[str, str] | None = None
        ) -> BackendClient:
            made = BackendClient(
                backend,
                cfg.url,
                credentials=Credentials(cfg.token, cfg.username, cfg.password),
                timeout=cfg.timeout or config.timeout,
                retry=config.retry,
                verify=cfg.verify,
                headers=headers,
                sleep=sleep,
                rng=rng,
            )
            self._clients.append(made)
            return made

        def build(backend: str, headers: Mapping[str, str] | None = None) -> Any:
            cfg: BackendConfig | None = getattr(config, backend)
            if cfg is None:
                return None
            return _CONNECTORS[backend](client(backend, cfg, headers), **cfg.options)

        self.prometheus: PrometheusConnector | None = build("prometheus")
        self.loki: LokiConnector | None = build("loki")
        self.tempo: TempoConnector | None = build("tempo")
        self.jaeger: JaegerConnector | None = build("jaeger")
        self.kubernetes: KubernetesConnector | None = build("kubernetes")
        self.github: GitHubConnector | None = build("github", GITHUB_HEADERS)

    # --- lifecycle ---

    def close(self) -> None:
        """Close every backend client."""
        for client in self._clients:
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- TelemetrySource ---

    def modalities(self) -> frozenset[Modality]:
        """The modalities of the configured backends."""
        present = {
            Modality.METRICS: self.prometheus,
            Modality.LOGS: self.loki,
            Modality.TRACES: self.tempo or self.jaeger,
            Modality.EVENTS: self.kubernetes,
            Modality.CHANGES: self.github,
        }
        return frozenset(m for m, connector in present.items() if connector is not None)

    def time_range(self) -> TimeWindow:
        """A recent horizon ending now (live backends hold what their retention allows)."""
        now = self._now()
        return TimeWindow(now - self.config.horizon_seconds, now)

    def topology(self) -> DependencyGraph:
        """The configured static edges, else a graph derived from recent spans (cached per source)."""
        if self._topology is None:
            if self.config.topology_edges:
                self._topology = graph_from_edges(self.config.topology_edges)
            elif self.tempo or self.jaeger:
                self._topology = graph_from_spans(self.spans(self._recent()))
            else:
                self._topology = DependencyGraph(entities=(), edges=())
        return self._topology

    def baseline_window(self, onset: float) -> TimeWindow | None:
        """`baseline_seconds` ending `baseline_gap_seconds` before `onset`."""
        end = onset - self.config.baseline_gap_seconds
        return TimeWindow(end - self.config.baseline_seconds, end)

    def metric_names(self, entity: str) -> Sequence[str]:
        """Metrics Prometheus has for `entity` recently (none without Prometheus)."""
        return self.prometheus.metric_names(entity, self._recent()) if self.prometheus else []

    def metrics(
        self, entity: str, window: TimeWindow, names: Iterable[str] | None = None
    ) -> list[MetricSeries]:
        """Metric series of `entity` inside `window`."""
        return self.prometheus.metrics(entity, window, names) if self.prometheus else []

    def logs(
        self, entity: str, window: TimeWindow, pattern: str | None = None, limit: int = 10_000
    ) -> list[LogRecord]:
        """Log records of `entity` inside `window`."""
        return self.loki.logs(entity, window, pattern, limit) if self.loki else []

    def spans(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> list[Span]:
        """Spans inside `window`, from Tempo when configured, else Jaeger."""
        traces = self.tempo or self.jaeger
        return traces.spans(window, entity, limit) if traces else []

    def events(self, window: TimeWindow, entity: str | None = None) -> list[Event]:
        """Kubernetes events and GitHub changes inside `window`, in time order."""
        out: list[Event] = []
        for connector in (self.kubernetes, self.github):
            if connector is not None:
                out.extend(connector.events(window, entity))
        return sorted(out, key=lambda e: (e.time, e.entity, e.kind))

    def _recent(self) -> TimeWindow:
        now = self._now()
        return TimeWindow(now - self.config.recent_seconds, now)
