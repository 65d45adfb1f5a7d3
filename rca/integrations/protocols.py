"""What each kind of connector offers its user: the live telemetry source reads metrics, logs, traces and
events through the first four; the notify action sends through a `NotificationChannel`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from rca.integrations.journal import Journal
from rca.telemetry.model import Event, LogRecord, MetricSeries, Span, TimeWindow


class MetricsConnector(Protocol):
    """Metric series of an entity (Prometheus)."""

    def metric_names(self, entity: str, window: TimeWindow) -> list[str]:
        """Metric names that have series for `entity` inside `window`."""
        ...

    def metrics(
        self, entity: str, window: TimeWindow, names: Iterable[str] | None = None
    ) -> list[MetricSeries]:
        """Series of `entity` in `window`: the named metrics, or (bounded) all it has."""
        ...

    def service_graph(self, window: TimeWindow) -> list[tuple[str, str, float]]:
        """Caller -> callee edges (with call counts) from service-graph metrics inside `window`."""
        ...

    def services(self, window: TimeWindow, beside: Iterable[str]) -> list[str]:
        """The services running beside `beside` (their namespaces) inside `window`, called or not."""
        ...


class LogsConnector(Protocol):
    """Log records of an entity (Loki)."""

    def logs(
        self, entity: str, window: TimeWindow, pattern: str | None = None, limit: int = 10_000
    ) -> list[LogRecord]:
        """Log records of `entity` in `window` (oldest first), at most `limit`."""
        ...


class TracesConnector(Protocol):
    """Spans (Tempo, Jaeger)."""

    def spans(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> list[Span]:
        """Spans starting in `window` of traces touching `entity` (any when None)."""
        ...


class EventsConnector(Protocol):
    """Events on a timeline: Kubernetes events, GitHub changes."""

    def events(self, window: TimeWindow, entity: str | None = None) -> list[Event]:
        """Events inside `window` (about `entity` when given)."""
        ...


class NotificationChannel(Protocol):
    """Sends one notification, recorded in `journal` (and only recorded in dry run)."""

    name: str

    def send(self, subject: str, text: str, journal: Journal) -> None:
        """Send `text` (channels without a subject line ignore `subject`)."""
        ...
