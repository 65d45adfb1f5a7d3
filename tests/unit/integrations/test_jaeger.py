"""Jaeger connector against recorded query-service exchanges (/api/traces, /api/services)."""

from __future__ import annotations

import pytest
import respx

from rca.integrations.http import BackendError
from rca.integrations.jaeger.connector import JaegerConnector
from rca.telemetry.model import SpanKind, SpanStatus

from .recorded import WINDOW, reply

URL = "http://jaeger:16686"
T1 = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
def jaeger(make_client) -> JaegerConnector:
    return JaegerConnector(make_client("jaeger", URL))


def test_traces_become_spans(jaeger: JaegerConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/traces").mock(return_value=reply("jaeger", "traces"))
        spans = jaeger.spans(WINDOW, "cartservice")
    params = route.calls.last.request.url.params
    assert params["service"] == "cartservice"
    assert params["limit"] == "50"
    assert (params["start"], params["end"]) == ("1714557600000000", "1714558200000000")  # microseconds

    front, cart, redis = spans  # ordered by start
    assert (front.entity, front.kind, front.status) == ("frontend", SpanKind.SERVER, SpanStatus.ERROR)
    assert front.parent_span_id is None
    assert front.trace_id == T1
    assert front.instance == "frontend-6b8d4f7c9-abcde"  # the process' hostname tag
    assert front.start == pytest.approx(1714557660.0)
    assert front.duration == pytest.approx(0.85)
    assert cart.parent_span_id == front.span_id
    assert cart.status is SpanStatus.ERROR
    assert cart.instance == "cartservice-7d4b9c8f6d-x2k4j"
    # CHILD_OF wins over an earlier FOLLOWS_FROM; a string "true" error tag counts.
    assert redis.parent_span_id == cart.span_id
    assert redis.status is SpanStatus.ERROR
    assert redis.kind is SpanKind.CLIENT
    assert redis.attributes["db.system"] == "redis"


def test_without_a_service_every_service_is_searched(jaeger: JaegerConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        mock.get("/api/services").mock(return_value=reply("jaeger", "services"))
        mock.get("/api/traces", params__contains={"service": "checkoutservice"}).mock(
            return_value=reply("jaeger", "traces_checkout")
        )
        mock.get("/api/traces", params__contains={"service": "cartservice"}).mock(
            return_value=reply("jaeger", "traces")
        )
        spans = jaeger.spans(WINDOW)
    assert len(spans) == 4  # the trace both services share is counted once
    short = next(s for s in spans if s.entity == "checkoutservice")
    assert short.trace_id == "00000000000000001a2b3c4d5e6f7081"  # 64-bit Jaeger ids are zero-padded


def test_errors_array_is_reported(jaeger: JaegerConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        mock.get("/api/traces").mock(return_value=reply("jaeger", "service_missing"))
        with pytest.raises(BackendError, match=r"^jaeger: .*HTTP 400.*parameter 'service' is required"):
            jaeger.spans(WINDOW, "cartservice")


def test_data_of_the_wrong_type_is_a_shape_error(jaeger: JaegerConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        mock.get("/api/traces").mock(return_value=reply("jaeger", "wrong_shape"))
        with pytest.raises(BackendError, match=r"^jaeger: unexpected response shape in traces"):
            jaeger.spans(WINDOW, "cartservice")
