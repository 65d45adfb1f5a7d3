"""Loki connector against recorded /loki/api/v1/query_range exchanges."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import respx

from rca.integrations.http import BackendError
from rca.integrations.loki.connector import LokiConnector
from rca.telemetry.model import Severity, TimeWindow

from .recorded import WINDOW, reply

URL = "http://loki:3100"


@pytest.fixture
def loki(make_client) -> LokiConnector:
    return LokiConnector(make_client("loki", URL))


def test_streams_become_time_ordered_records(loki: LokiConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/loki/api/v1/query_range").mock(return_value=reply("loki", "query_range"))
        records = loki.logs("cartservice", WINDOW, pattern="redis|cart")
    sent = parse_qs(urlsplit(str(route.calls.last.request.url)).query)
    assert sent["query"] == ['{service_name="cartservice"} |~ "redis|cart"']
    assert sent["start"] == ["1714557600000000000"]
    assert sent["end"] == ["1714558200000000000"]
    assert sent["direction"] == ["forward"]
    assert sent["limit"] == ["1000"]

    assert [r.time for r in records] == sorted(r.time for r in records)
    assert len(records) == 5
    assert {r.entity for r in records} == {"cartservice"}
    first, second, third, fourth, fifth = records
    assert first.severity is Severity.WARN  # "severity_text":"Warning" in a JSON line; detected_level unknown
    assert second.severity is Severity.INFO  # "no errors" is prose, not a level
    assert third.severity is Severity.ERROR
    assert third.time == pytest.approx(1714557660.123456789)
    assert third.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert third.span_id == "00f067aa0ba902b7"
    assert third.instance == "cartservice-7d4b9c8f6d-x2k4j"
    assert fourth.severity is Severity.INFO
    assert fourth.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert fifth.severity is Severity.ERROR
    assert "deadline exceeded" in fifth.body


def test_categorized_labels_entry_carries_structured_metadata(loki: LokiConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        mock.get("/loki/api/v1/query_range").mock(return_value=reply("loki", "categorized"))
        (record,) = loki.query_range('{service_name="checkoutservice"}', WINDOW)
    assert record.entity == "checkoutservice"
    assert record.severity is Severity.ERROR
    assert record.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"


def test_pages_forward_from_the_newest_entry(make_client) -> None:
    loki = LokiConnector(make_client("loki", URL), page_size=2)
    base = 1714557600_000000000

    def page(request: httpx.Request) -> httpx.Response:
        start = int(request.url.params["start"])
        stamps = [t for t in (base + 1, base + 2, base + 3) if t >= start][: int(request.url.params["limit"])]
        body = {
            "status": "success",
            "data": {
                "resultType": "streams",
                "result": [
                    {
                        "stream": {"service_name": "cartservice"},
                        "values": [[str(t), f"line {t - base}"] for t in stamps],
                    }
                ],
            },
        }
        return httpx.Response(200, content=json.dumps(body).encode())

    with respx.mock(base_url=URL) as mock:
        route = mock.get("/loki/api/v1/query_range").mock(side_effect=page)
        records = loki.logs("cartservice", WINDOW, limit=10)
    assert [r.body for r in records] == ["line 1", "line 2", "line 3"]
    assert route.call_count == 2
    assert route.calls[1].request.url.params["start"] == str(base + 3)


def test_limit_bounds_the_answer(loki: LokiConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/loki/api/v1/query_range").mock(return_value=reply("loki", "query_range"))
        records = loki.logs("cartservice", TimeWindow(WINDOW.start, WINDOW.end), limit=2)
    assert route.calls.last.request.url.params["limit"] == "2"
    assert len(records) == 2


def test_plain_text_error_is_quoted(loki: LokiConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        mock.get("/loki/api/v1/query_range").mock(return_value=reply("loki", "parse_error"))
        with pytest.raises(BackendError, match=r"^loki: .*HTTP 400 Bad Request: parse error at line 1"):
            loki.logs("cartservice", WINDOW)
