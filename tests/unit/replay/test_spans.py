"""Recorded spans as the OpenTelemetry Collector's span-metrics and service-graph series."""

from __future__ import annotations

import numpy as np
import pytest

from rca.telemetry.model import Span, SpanKind, SpanStatus
from rca.telemetry.replay.openmetrics import Exposition
from rca.telemetry.replay.spans import FLUSH_INTERVAL, covered, write_spans
from rca.telemetry.replay.timeline import Timeline
from tests.unit.replay.omtext import select, values, written

NOW = 1_800_000_000.0
# a timeline whose shift is zero: the alert at NOW - lead
TIMELINE = Timeline(now=NOW, onset=NOW - 240.0, shift=0.0, step=60.0)


def span(
    sid: str,
    parent: str | None,
    entity: str,
    start: float,
    seconds: float,
    kind: SpanKind,
    status: SpanStatus = SpanStatus.UNSET,
    name: str = "GET /x",
) -> Span:
    return Span("t1", sid, parent, entity, name, NOW + start, NOW + start + seconds, status, kind)


def test_calls_durations_and_the_service_graph() -> None:
    spans = [
        span("a", None, "front", -100.0, 0.5, SpanKind.SERVER),
        span("b", "a", "front", -99.9, 0.3, SpanKind.CLIENT),
        span("c", "b", "cart", -99.8, 0.15, SpanKind.SERVER, SpanStatus.ERROR),
        span("d", "a", "front", -99.0, 0.001, SpanKind.INTERNAL),
    ]
    expo = Exposition()
    summary = write_spans(expo, spans, TIMELINE)
    out = written(expo)
    assert (summary.spans, summary.pairs, summary.stretches) == (4, 1, 1)
    calls = select(out, "traces_span_metrics_calls_total")
    assert {(s.labels["service_name"], s.labels["span_kind"], s.labels["status_code"]) for s in calls} == {
        ("front", "SPAN_KIND_SERVER", "STATUS_CODE_UNSET"),
        ("front", "SPAN_KIND_CLIENT", "STATUS_CODE_UNSET"),
        ("front", "SPAN_KIND_INTERNAL", "STATUS_CODE_UNSET"),
        ("cart", "SPAN_KIND_SERVER", "STATUS_CODE_ERROR"),
    }
    # the flush after the span's end, on the 15 s grid ending at now
    assert {s.time for s in calls} == {NOW - 90.0}
    cart = {"service_name": "cart"}
    buckets = {
        s.labels["le"]: s.value
        for s in select(out, "traces_span_metrics_duration_milliseconds_bucket", **cart)
    }
    assert buckets["100.0"] == 0.0
    assert buckets["200.0"] == 1.0
    assert values(out, "traces_span_metrics_duration_milliseconds_sum", **cart) == pytest.approx([150.0])
    edge = {"client": "front", "server": "cart"}
    assert values(out, "traces_service_graph_request_total", **edge) == [1.0]
    assert values(out, "traces_service_graph_request_failed_total", **edge) == [1.0]
    assert values(out, "traces_service_graph_request_server_seconds_sum", **edge) == pytest.approx([0.15])
    assert values(out, "traces_service_graph_request_client_seconds_sum", **edge) == pytest.approx([0.3])


def test_series_are_written_over_covered_stretches_only_and_from_their_first_span() -> None:
    spans = [
        span("a", None, "front", -600.0, 0.1, SpanKind.SERVER),
        span("b", None, "front", -570.0, 0.1, SpanKind.SERVER),
        span("c", None, "front", -120.0, 0.1, SpanKind.SERVER),  # after a 7.5 min hole
        span("d", None, "cart", -100.0, 0.1, SpanKind.SERVER),
    ]
    expo = Exposition()
    summary = write_spans(expo, spans, TIMELINE)
    out = written(expo)
    assert summary.stretches == 2
    front = select(out, "traces_span_metrics_calls_total", service_name="front")
    assert [s.time - NOW for s in front] == [-585.0, -570.0, -555.0, -105.0, -90.0]
    assert [s.value for s in front] == [1.0, 1.0, 2.0, 3.0, 3.0]
    cart = select(out, "traces_span_metrics_calls_total", service_name="cart")
    assert [s.time - NOW for s in cart] == [-90.0]


def test_spans_after_now_are_left_out() -> None:
    expo = Exposition()
    write_spans(expo, [span("a", None, "front", 30.0, 0.1, SpanKind.SERVER)], TIMELINE)
    assert written(expo, not_after=NOW) == []


def test_no_spans_no_series() -> None:
    expo = Exposition()
    assert write_spans(expo, [], TIMELINE).spans == 0
    assert expo.families() == []


def test_covered_stretches() -> None:
    bins = np.array([0.0, 15.0, 45.0, 200.0]) + NOW
    assert (covered(bins) - NOW).tolist() == [0.0, 15.0, 30.0, 45.0, 200.0]
    assert FLUSH_INTERVAL == 15.0
