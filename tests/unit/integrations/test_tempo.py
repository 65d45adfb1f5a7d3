"""Tempo connector against recorded /api/search and /api/traces/{id} exchanges."""

from __future__ import annotations

import pytest
import respx

from rca.integrations.http import BackendError
from rca.integrations.tempo.connector import TempoConnector
from rca.telemetry.model import SpanKind, SpanStatus
from rca.telemetry.topology import graph_from_spans

from .recorded import WINDOW, reply

URL = "http://tempo:3200"
T1 = "4bf92f3577b34da6a3ce929d0e0e4736"
T2 = "00000000000000001a2b3c4d5e6f7081"


@pytest.fixture
def tempo(make_client) -> TempoConnector:
    return TempoConnector(make_client("tempo", URL))


def _mock_all(mock: respx.MockRouter) -> respx.Route:
    mock.get(f"/api/traces/{T1}").mock(return_value=reply("tempo", "trace_v1"))
    mock.get(f"/api/traces/{T2}").mock(return_value=reply("tempo", "trace_v2"))
    return mock.get("/api/search").mock(return_value=reply("tempo", "search"))


def test_search_then_fetch_yields_otlp_spans(tempo: TempoConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        search = _mock_all(mock)
        spans = tempo.spans(WINDOW, "cartservice")
    params = search.calls.last.request.url.params
    assert params["q"] == '{ resource.service.name = "cartservice" }'
    assert (params["start"], params["end"], params["limit"]) == ("1714557600", "1714558200", "50")

    by_id = {s.span_id: s for s in spans}
    assert len(spans) == 7
    root = by_id["00f067aa0ba902b7"]  # base64 ids in the v1 answer decode to these hex ids
    assert root.trace_id == T1
    assert root.parent_span_id is None
    assert (root.entity, root.kind, root.status) == ("frontend", SpanKind.SERVER, SpanStatus.ERROR)
    assert root.instance == "frontend-6b8d4f7c9-abcde"
    assert root.attributes["http.response.status_code"] == 500
    assert root.attributes["http.route"] == "/cart"
    assert root.start == pytest.approx(1714557660.0)
    assert root.duration == pytest.approx(0.85)
    cart = by_id["53995c3f42cd8ad8"]
    assert cart.parent_span_id == "b7ad6b7169203331"
    assert cart.entity == "cartservice"
    assert cart.instance == "cartservice-7d4b9c8f6d-x2k4j"
    redis = by_id["e457b5a2e4d86bd1"]
    assert redis.status is SpanStatus.UNSET
    assert redis.kind is SpanKind.CLIENT
    assert str(redis.attributes["db.redis.args"]).startswith('{"arrayValue"')

    # v2 answer: hex ids, enum names, instrumentationLibrarySpans.
    charge = by_id["2222222222222222"]
    assert charge.trace_id == T2
    assert charge.kind is SpanKind.CLIENT
    assert charge.status is SpanStatus.UNSET
    assert charge.attributes == {"retry": True, "ratio": 0.5}
    payment = by_id["3333333333333333"]
    assert (payment.entity, payment.status, payment.kind) == (
        "paymentservice",
        SpanStatus.ERROR,
        SpanKind.SERVER,
    )
    assert by_id["1111111111111111"].status is SpanStatus.OK


def test_topology_from_tempo_spans(tempo: TempoConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        _mock_all(mock)
        graph = graph_from_spans(tempo.spans(WINDOW))
    assert graph.has_edge("frontend", "cartservice")
    assert graph.has_edge("checkoutservice", "paymentservice")
    assert not graph.has_edge("cartservice", "frontend")


def test_tags_search_mode(make_client) -> None:
    tempo = TempoConnector(make_client("tempo", URL), use_traceql=False, max_traces=5)
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/search").mock(return_value=reply("tempo", "search_empty"))
        assert tempo.search(WINDOW, "cartservice") == []
    params = route.calls.last.request.url.params
    assert params["tags"] == "service.name=cartservice"
    assert "q" not in params
    assert params["limit"] == "5"


def test_search_ids_are_normalised(tempo: TempoConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        mock.get("/api/search").mock(return_value=reply("tempo", "search"))
        assert tempo.search(WINDOW) == [T1, T2]  # Tempo drops leading zeros; we restore 32 hex digits


def test_max_traces_bounds_the_fan_out(make_client) -> None:
    tempo = TempoConnector(make_client("tempo", URL), max_traces=1)
    with respx.mock(base_url=URL, assert_all_called=False) as mock:
        _mock_all(mock)
        spans = tempo.spans(WINDOW)
        assert not mock.routes[1].called
    assert {s.trace_id for s in spans} == {T1}


def test_bad_trace_id_is_a_named_shape_error(tempo: TempoConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        mock.get("/api/search").mock(return_value=reply("tempo", "bad_trace_id"))
        with pytest.raises(BackendError, match=r"^tempo: unexpected response shape in search: traceID"):
            tempo.spans(WINDOW)
