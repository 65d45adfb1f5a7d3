"""Grafana Tempo connector: trace search (TraceQL or tags) and trace fetch (OTLP JSON) to Spans."""

from __future__ import annotations

import json
import math
from typing import Any

from rca.integrations.http import HttpClient
from rca.integrations.otel import clip_spans, normalize_id, opt_id, span_kind, span_status
from rca.integrations.parsing import as_dict, as_list, as_str, ns_to_seconds, opt_str, quote
from rca.telemetry.model import Span, TimeWindow

AttributeValue = str | int | float | bool


def otlp_value(value: Any) -> AttributeValue:
    """An OTLP/JSON AnyValue (`{"stringValue": ...}`, `{"intValue": "42"}`, ...) as a scalar.

    Arrays and key-value lists are kept as their JSON text so that attributes stay flat.
    """
    value = as_dict(value, "attribute value")
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])  # int64 travels as a string in proto3 JSON
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value or "kvlistValue" in value or "bytesValue" in value:
        return json.dumps(value, sort_keys=True)
    return ""


def otlp_attributes(items: Any) -> dict[str, AttributeValue]:
    """An OTLP/JSON attribute list (`[{"key": ..., "value": {...}}]`) as a flat mapping."""
    out: dict[str, AttributeValue] = {}
    for item in as_list(items, "attributes"):
        item = as_dict(item, "attribute")
        out[as_str(item.get("key"), "attribute key")] = otlp_value(item.get("value", {}))
    return out


def spans_from_otlp(body: Any) -> list[Span]:
    """Spans of an OTLP/JSON trace.

    Accepts the shapes Tempo has served: `{"batches": [...]}` (API v1), `{"trace":
    {"resourceSpans": [...]}}` (API v2) and plain `{"resourceSpans": [...]}`, with `scopeSpans`
    or the older `instrumentationLibrarySpans`.
    """
    body = as_dict(body, "trace")
    if "trace" in body:
        body = as_dict(body["trace"], "trace")
    resource_spans = body.get("batches", body.get("resourceSpans"))
    spans: list[Span] = []
    for rs in as_list(resource_spans, "resourceSpans"):
        rs = as_dict(rs, "resourceSpans[]")
        resource = otlp_attributes(as_dict(rs.get("resource", {}), "resource").get("attributes"))
        service = str(resource.get("service.name") or "unknown_service")
        raw_instance = resource.get("service.instance.id") or resource.get("k8s.pod.name")
        instance = str(raw_instance) if raw_instance else None
        scopes = rs.get("scopeSpans", rs.get("instrumentationLibrarySpans"))
        for scope in as_list(scopes, "scopeSpans"):
            for raw in as_list(as_dict(scope, "scopeSpans[]").get("spans"), "spans"):
                spans.append(_span(as_dict(raw, "span"), service, instance))
    return spans


def _span(raw: dict[str, Any], service: str, instance: str | None) -> Span:
    status = as_dict(raw.get("status") or {}, "status")
    return Span(
        trace_id=normalize_id(raw.get("traceId"), 16, "traceId"),
        span_id=normalize_id(raw.get("spanId"), 8, "spanId"),
        parent_span_id=opt_id(raw.get("parentSpanId"), 8, "parentSpanId"),
        entity=service,
        name=opt_str(raw.get("name")) or "",
        start=ns_to_seconds(raw.get("startTimeUnixNano"), "startTimeUnixNano"),
        end=ns_to_seconds(raw.get("endTimeUnixNano"), "endTimeUnixNano"),
        status=span_status(status.get("code", 0)),
        kind=span_kind(raw.get("kind", 0)),
        attributes=otlp_attributes(raw.get("attributes")),
        instance=instance,
    )


class TempoConnector:
    """Spans from Grafana Tempo: search for trace ids, then fetch each trace."""

    def __init__(self, client: HttpClient, *, max_traces: int = 50, use_traceql: bool = True) -> None:
        self.client = client
        self.max_traces = max_traces  # each trace is one more request: keep the fan-out bounded
        self.use_traceql = use_traceql  # Tempo 2+; False uses the older `tags` search

    def search(self, window: TimeWindow, entity: str | None = None, limit: int | None = None) -> list[str]:
        """Ids of traces in `window` (touching `entity` when given), newest first as Tempo ranks them."""
        params: dict[str, str] = {
            "start": str(math.floor(window.start)),
            "end": str(math.ceil(window.end)),  # Tempo takes whole seconds
            "limit": str(limit or self.max_traces),
        }
        if self.use_traceql:
            params["q"] = "{ resource.service.name = " + quote(entity) + " }" if entity else "{ }"
        elif entity:
            params["tags"] = f"service.name={entity}"
        body = self.client.get_json("/api/search", params)
        with self.client.parsing("search"):
            traces = as_list(as_dict(body, "search response").get("traces"), "traces")
            return [normalize_id(as_dict(t, "traces[]").get("traceID"), 16, "traceID") for t in traces]

    def trace(self, trace_id: str) -> list[Span]:
        """All spans of one trace."""
        body = self.client.get_json(f"/api/traces/{trace_id}")
        with self.client.parsing(f"trace {trace_id}"):
            return spans_from_otlp(body)

    def spans(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> list[Span]:
        """Spans starting in `window` of (at most `max_traces`) traces touching `entity`."""
        collected: list[Span] = []
        for trace_id in self.search(window, entity)[: self.max_traces]:
            collected.extend(self.trace(trace_id))
            if len(collected) >= limit:
                break
        return clip_spans(collected, window, limit)
