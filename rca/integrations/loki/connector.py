"""Loki connector: LogQL `query_range` streams to LogRecords, paged forward in time."""

from __future__ import annotations

import re
from typing import Any

from rca.integrations.http import HttpClient
from rca.integrations.otel import entity_from_labels, severity_of
from rca.integrations.parsing import ShapeError, as_dict, as_list, as_str, ns_to_seconds, quote, seconds_to_ns
from rca.integrations.prometheus.connector import status_data
from rca.telemetry.model import LogRecord, TimeWindow

SEVERITY_LABELS: tuple[str, ...] = ("level", "detected_level", "severity_text", "severity")
_TRACE_LABELS = ("trace_id", "traceID", "traceid", "otel_trace_id")
_SPAN_LABELS = ("span_id", "spanID", "spanid", "otel_span_id")
_TRACE_IN_LINE = re.compile(r"trace[_-]?id\"?\s*[=:]\s*\"?([0-9a-fA-F]{32})\b", re.IGNORECASE)
_SPAN_IN_LINE = re.compile(r"span[_-]?id\"?\s*[=:]\s*\"?([0-9a-fA-F]{16})\b", re.IGNORECASE)


class LokiConnector:
    """Log records from Loki's HTTP API."""

    def __init__(
        self,
        client: HttpClient,
        *,
        entity_label: str = "service_name",
        page_size: int = 1000,
        max_pages: int = 20,
    ) -> None:
        self.client = client
        self.entity_label = entity_label  # Loki 3 derives service_name from OTel resources
        self.page_size = page_size  # Loki's default max_entries_limit_per_query is 5000
        self.max_pages = max_pages

    def selector(self, entity: str, pattern: str | None = None) -> str:
        """LogQL for one entity, optionally filtered by a regex: `{service_name="x"} |~ "re"`."""
        query = "{" + f"{self.entity_label}={quote(entity)}" + "}"
        return f"{query} |~ {quote(pattern)}" if pattern else query

    def logs(
        self, entity: str, window: TimeWindow, pattern: str | None = None, limit: int = 10_000
    ) -> list[LogRecord]:
        """Log records of `entity` in `window` (oldest first), at most `limit`."""
        return self.query_range(self.selector(entity, pattern), window, limit, entity=entity)

    def query_range(
        self, query: str, window: TimeWindow, limit: int = 10_000, entity: str | None = None
    ) -> list[LogRecord]:
        """Run a LogQL log query over `window`, paging forward until `limit` or `max_pages`.

        Each page starts one nanosecond after the newest entry of the previous one, so lines
        sharing that exact nanosecond across a page boundary may be missed; that is Loki's own
        paging contract.
        """
        records: list[LogRecord] = []
        start_ns, end_ns = seconds_to_ns(window.start), seconds_to_ns(window.end)
        for _ in range(self.max_pages):
            want = min(self.page_size, limit - len(records))
            if want <= 0 or start_ns >= end_ns:
                break
            body = self.client.get_json(
                "/loki/api/v1/query_range",
                {
                    "query": query,
                    "start": str(start_ns),
                    "end": str(end_ns),
                    "limit": str(want),
                    "direction": "forward",
                },
            )
            page, newest_ns = self._parse(body, entity)
            records.extend(r for r in page if window.contains(r.time))
            if len(page) < want or newest_ns is None:
                break
            start_ns = newest_ns + 1
        records.sort(key=lambda r: r.time)
        return records[:limit]

    def _parse(self, body: Any, entity: str | None) -> tuple[list[LogRecord], int | None]:
        data = status_data(self.client, body, "query_range")
        records: list[LogRecord] = []
        newest: int | None = None
        with self.client.parsing("query_range"):
            data = as_dict(data, "data")
            if data.get("resultType") != "streams":
                raise ShapeError(f"resultType is {data.get('resultType')!r}, expected 'streams'")
            for stream in as_list(data.get("result"), "data.result"):
                stream = as_dict(stream, "result[]")
                labels = {str(k): str(v) for k, v in as_dict(stream.get("stream", {}), "stream").items()}
                for entry in as_list(stream.get("values"), "values"):
                    record, ts_ns = self._record(as_list(entry, "values[]"), labels, entity)
                    records.append(record)
                    newest = ts_ns if newest is None else max(newest, ts_ns)
        return records, newest

    def _record(
        self, entry: list[Any], stream_labels: dict[str, str], entity: str | None
    ) -> tuple[LogRecord, int]:
        if len(entry) not in (2, 3):
            raise ShapeError(f"values[]: expected [ns, line(, metadata)], got {len(entry)} items")
        ts_ns = int(as_str(entry[0], "entry time"))
        line = entry[1] if isinstance(entry[1], str) else str(entry[1])
        labels = stream_labels
        if len(entry) == 3 and isinstance(entry[2], dict):
            # Loki 3 "categorize-labels" encoding: {"structuredMetadata": {...}, "parsed": {...}}.
            extra: dict[str, str] = {}
            for group in ("structuredMetadata", "parsed"):
                if isinstance(entry[2].get(group), dict):
                    extra.update({str(k): str(v) for k, v in entry[2][group].items()})
            labels = {**stream_labels, **extra}
        found, instance = entity_from_labels(labels, (self.entity_label, "service_name", "service", "job"))
        record = LogRecord(
            time=ns_to_seconds(ts_ns, "entry time"),
            entity=entity or found or "unknown",
            severity=severity_of(labels, line, SEVERITY_LABELS),
            body=line,
            trace_id=_first(labels, _TRACE_LABELS) or _search(_TRACE_IN_LINE, line),
            span_id=_first(labels, _SPAN_LABELS) or _search(_SPAN_IN_LINE, line),
            instance=instance,
        )
        return record, ts_ns


def _first(labels: dict[str, str], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if labels.get(key):
            return labels[key].lower()
    return None


def _search(pattern: re.Pattern[str], line: str) -> str | None:
    match = pattern.search(line)
    return match.group(1).lower() if match else None
