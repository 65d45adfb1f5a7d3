"""Jaeger query API connector: `/api/traces` search results (Jaeger JSON) to Spans."""

from __future__ import annotations

from typing import Any

from rca.integrations.http import HttpClient
from rca.integrations.otel import clip_spans, normalize_id, span_kind, span_status
from rca.integrations.parsing import ShapeError, as_dict, as_int, as_list, as_str, opt_str
from rca.telemetry.model import Span, SpanKind, SpanStatus, TimeWindow

AttributeValue = str | int | float | bool
_INSTANCE_TAGS = ("service.instance.id", "k8s.pod.name", "hostname", "host.name")


def jaeger_tags(items: Any) -> dict[str, AttributeValue]:
    """Jaeger `tags` (`[{"key", "type", "value"}]`) as a flat mapping."""
    out: dict[str, AttributeValue] = {}
    for item in as_list(items, "tags"):
        item = as_dict(item, "tag")
        value = item.get("value")
        if not isinstance(value, str | int | float | bool):
            value = str(value)
        out[as_str(item.get("key"), "tag key")] = value
    return out


def spans_from_jaeger(trace: Any) -> list[Span]:
    """Spans of one Jaeger trace (`{"traceID", "spans": [...], "processes": {...}}`)."""
    trace = as_dict(trace, "trace")
    processes = as_dict(trace.get("processes") or {}, "processes")
    spans: list[Span] = []
    for raw in as_list(trace.get("spans"), "spans"):
        raw = as_dict(raw, "span")
        # Search results share processes per trace ("processID"); some exports inline "process".
        process = as_dict(processes.get(str(raw.get("processID")), raw.get("process") or {}), "process")
        process_tags = jaeger_tags(process.get("tags"))
        instance = next((str(process_tags[k]) for k in _INSTANCE_TAGS if process_tags.get(k)), None)
        tags = jaeger_tags(raw.get("tags"))
        start_us = as_int(raw.get("startTime"), "startTime")
        trace_id = normalize_id(raw.get("traceID"), 16, "traceID")
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=normalize_id(raw.get("spanID"), 8, "spanID"),
                parent_span_id=_parent(raw.get("references"), trace_id),
                entity=opt_str(process.get("serviceName")) or "unknown_service",
                name=opt_str(raw.get("operationName")) or "",
                start=start_us / 1e6,
                end=(start_us + as_int(raw.get("duration", 0), "duration")) / 1e6,
                status=_status(tags),
                kind=span_kind(tags.get("span.kind")) if "span.kind" in tags else SpanKind.UNSPECIFIED,
                attributes=tags,
                instance=instance,
            )
        )
    return spans


def _parent(references: Any, trace_id: str) -> str | None:
    # The parent is the CHILD_OF reference; failing that, Jaeger itself treats the first
    # same-trace reference (FOLLOWS_FROM) as the parent.
    refs = [as_dict(r, "reference") for r in as_list(references, "references")]
    refs = [r for r in refs if normalize_id(r.get("traceID"), 16, "reference traceID") == trace_id]
    if not refs:
        return None
    parent = min(refs, key=lambda r: r.get("refType") != "CHILD_OF")  # stable: first CHILD_OF wins
    return normalize_id(parent.get("spanID"), 8, "reference spanID")


def _status(tags: dict[str, AttributeValue]) -> SpanStatus:
    if "otel.status_code" in tags:
        return span_status(tags["otel.status_code"])
    error = tags.get("error")
    if error is True or (isinstance(error, str) and error.lower() == "true"):
        return SpanStatus.ERROR
    return SpanStatus.UNSET


class JaegerConnector:
    """Spans from the Jaeger query service's HTTP API (the one its UI uses)."""

    def __init__(self, client: HttpClient, *, max_traces: int = 50, max_services: int = 50) -> None:
        self.client = client
        self.max_traces = max_traces  # per search; Jaeger returns whole traces, so keep it modest
        self.max_services = max_services  # bound the fan-out when no service is named

    def services(self) -> list[str]:
        """Service names Jaeger knows."""
        body = self.client.get_json("/api/services")
        with self.client.parsing("services"):
            names = as_list(self._data(body, "services"), "data")
            return sorted(as_str(n, "service name") for n in names)

    def traces(self, service: str, window: TimeWindow, limit: int | None = None) -> list[list[Span]]:
        """Traces touching `service` inside `window`, each as its spans."""
        body = self.client.get_json(
            "/api/traces",
            {
                "service": service,
                "start": str(int(window.start * 1e6)),
                "end": str(int(window.end * 1e6)),
                "limit": str(limit or self.max_traces),
            },
        )
        with self.client.parsing("traces"):
            return [spans_from_jaeger(t) for t in as_list(self._data(body, "traces"), "data")]

    def spans(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> list[Span]:
        """Spans starting in `window` of traces touching `entity` (every known service when None)."""
        services = [entity] if entity else self.services()[: self.max_services]
        collected: list[Span] = []
        for service in services:
            for trace in self.traces(service, window):
                collected.extend(trace)
            if len(collected) >= limit:
                break
        return clip_spans(collected, window, limit)

    def _data(self, body: Any, what: str) -> Any:
        body = as_dict(body, f"{what} response")
        errors = as_list(body.get("errors"), "errors")
        data = body.get("data")
        if errors and not data:
            detail = "; ".join(str(e.get("msg", e)) if isinstance(e, dict) else str(e) for e in errors)
            raise self.client.error(f"{what} answered with errors: {detail}")
        if data is not None and not isinstance(data, list):
            raise ShapeError(f"{what}: data is {type(data).__name__}, expected an array")
        return data
