"""Prometheus HTTP API connector: `query_range` matrices to MetricSeries, and metric-name listing."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from rca.integrations.http import HttpClient
from rca.integrations.otel import entity_from_labels
from rca.integrations.parsing import ShapeError, as_dict, as_list, as_number, as_str, quote, regex_literal
from rca.telemetry.model import MetricSeries, TimeWindow

DEFAULT_ENTITY_LABELS: tuple[str, ...] = ("service_name", "service", "job")

# Unit suffixes of the Prometheus / OpenTelemetry naming conventions, checked after the
# counter / histogram suffixes are stripped; units are UCUM as OTel writes them.
_TYPE_SUFFIXES = ("_total", "_count", "_sum", "_bucket")
_UNIT_SUFFIXES = (
    ("_seconds", "s"),
    ("_milliseconds", "ms"),
    ("_bytes", "By"),
    ("_ratio", "1"),
    ("_percent", "%"),
    ("_celsius", "Cel"),
)


def unit_from_name(name: str) -> str:
    """The unit a Prometheus metric name declares by its suffix ('' when it declares none)."""
    base = name
    for suffix in _TYPE_SUFFIXES:
        if base.endswith(suffix):
            base = base.removesuffix(suffix)
            if suffix == "_count":
                return "1"
            break
    for suffix, unit in _UNIT_SUFFIXES:
        if base.endswith(suffix):
            return unit
    return "1" if name.endswith("_total") else ""


def status_data(client: HttpClient, body: Any, what: str) -> Any:
    """The `data` of a Prometheus-style envelope (`{"status": "success", "data": ...}`).

    Loki speaks the same envelope. A body with `status: error` (errorType / error) becomes a
    BackendError carrying the server's own explanation.
    """
    with client.parsing(what):
        envelope = as_dict(body, what)
        status = envelope.get("status")
        if status == "error":
            raise client.error(
                f"{what} answered status=error: {envelope.get('errorType', 'error')}: "
                f"{envelope.get('error', 'no message')}"
            )
        if status != "success":
            raise ShapeError(f"status is {status!r}, expected 'success'")
        return envelope.get("data")


class PrometheusConnector:
    """Metric series from the Prometheus HTTP API."""

    def __init__(
        self,
        client: HttpClient,
        *,
        entity_labels: Sequence[str] = DEFAULT_ENTITY_LABELS,
        max_points: int = 1000,
        min_step: float = 15.0,
        max_metrics: int = 50,
    ) -> None:
        self.client = client
        self.entity_labels = tuple(entity_labels)
        self.max_points = max_points  # per series; Prometheus itself refuses more than 11,000
        self.min_step = min_step
        self.max_metrics = max_metrics  # bound on "all metrics of an entity"

    def step_for(self, window: TimeWindow) -> float:
        """Resolution for `window`: at most `max_points` points, never finer than `min_step`."""
        return max(self.min_step, math.ceil(window.seconds / self.max_points))

    def entity_selectors(self, entity: str, extra: str = "") -> list[str]:
        """One series selector per entity label (they cannot be OR-ed inside one selector)."""
        selectors = []
        for label in self.entity_labels:
            if label == "job":  # job is `name` or `namespace/name`
                matcher = f"job=~{quote('(.+/)?' + regex_literal(entity))}"
            else:
                matcher = f"{label}={quote(entity)}"
            selectors.append("{" + ", ".join(m for m in (extra, matcher) if m) + "}")
        return selectors

    def query_range(
        self, query: str, window: TimeWindow, step: float | None = None, entity: str | None = None
    ) -> list[MetricSeries]:
        """Run a PromQL range query; each matrix series becomes a MetricSeries.

        `entity`, when given, names every series (the caller selected them by it); otherwise the
        entity comes from the series labels (service_name / service / job / pod).
        """
        body = self.client.get_json(
            "/api/v1/query_range",
            {
                "query": query,
                "start": f"{window.start:.3f}",
                "end": f"{window.end:.3f}",
                "step": f"{step or self.step_for(window):g}",
            },
        )
        data = status_data(self.client, body, "query_range")
        with self.client.parsing("query_range"):
            data = as_dict(data, "data")
            if data.get("resultType") != "matrix":
                raise ShapeError(f"resultType is {data.get('resultType')!r}, expected 'matrix'")
            return [
                self._series(as_dict(item, "result[]"), window, entity)
                for item in as_list(data.get("result"), "data.result")
            ]

    def metric_names(self, entity: str, window: TimeWindow) -> list[str]:
        """Metric names that have series for `entity` inside `window`."""
        body = self.client.get_json(
            "/api/v1/label/__name__/values",
            {
                "match[]": self.entity_selectors(entity),
                "start": f"{window.start:.3f}",
                "end": f"{window.end:.3f}",
            },
        )
        data = status_data(self.client, body, "label values")
        with self.client.parsing("label values"):
            return sorted({as_str(n, "metric name") for n in as_list(data, "data")})

    def metrics(
        self, entity: str, window: TimeWindow, names: Iterable[str] | None = None
    ) -> list[MetricSeries]:
        """Series of `entity` in `window`: the named metrics, or (bounded) all it has."""
        wanted = sorted(set(names)) if names is not None else self.metric_names(entity, window)
        wanted = wanted[: self.max_metrics]
        if not wanted:
            return []
        name_matcher = f"__name__=~{quote('|'.join(regex_literal(n) for n in wanted))}"
        query = " or ".join(self.entity_selectors(entity, name_matcher))
        series = self.query_range(query, window, entity=entity)
        return sorted(series, key=lambda s: (s.name, s.instance or ""))

    def _series(self, item: dict[str, Any], window: TimeWindow, entity: str | None) -> MetricSeries:
        labels = {str(k): str(v) for k, v in as_dict(item.get("metric", {}), "metric").items()}
        found, instance = entity_from_labels(labels, self.entity_labels)
        name = labels.get("__name__", "")
        points = as_list(item.get("values"), "values")
        timestamps = np.empty(len(points), dtype=np.float64)
        values = np.empty(len(points), dtype=np.float64)
        for i, point in enumerate(points):
            pair = as_list(point, "values[]")
            if len(pair) != 2:
                raise ShapeError(f"values[]: expected [time, value], got {pair!r:.60}")
            timestamps[i] = as_number(pair[0], "sample time")
            values[i] = as_number(pair[1], "sample value")  # strings; "NaN" and "+Inf" included
        # Prometheus' end is inclusive, the model's windows are closed-open.
        keep = timestamps < window.end
        return MetricSeries(
            entity=entity or found or "unknown",
            name=name,
            unit=unit_from_name(name),
            timestamps=timestamps[keep],
            values=values[keep],
            instance=instance,
        )
