"""Prometheus connector against recorded /api/v1 exchanges."""

from __future__ import annotations

import math
from urllib.parse import parse_qs, urlsplit

import pytest
import respx

from rca.integrations.http import BackendError
from rca.integrations.prometheus.connector import PrometheusConnector, unit_from_name

from .recorded import WINDOW, reply

URL = "http://prometheus:9090"


@pytest.fixture
def prom(make_client) -> PrometheusConnector:
    return PrometheusConnector(make_client("prometheus", URL))


def test_matrix_becomes_series_of_the_entity(prom: PrometheusConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/query_range").mock(return_value=reply("prometheus", "query_range"))
        series = prom.metrics(
            "cartservice",
            WINDOW,
            ["process_resident_memory_bytes", "http_server_request_duration_seconds_count"],
        )
    query = parse_qs(urlsplit(str(route.calls.last.request.url)).query)
    assert query["step"] == ["15"]
    assert query["start"] == ["1714557600.000"]
    promql = query["query"][0]
    assert promql.count(" or ") == 2
    assert 'service_name="cartservice"' in promql
    assert 'service="cartservice"' in promql
    assert 'job=~"(.+/)?cartservice"' in promql
    assert '__name__=~"http_server_request_duration_seconds_count|process_resident_memory_bytes"' in promql

    by_name = {s.name: s for s in series}
    memory = by_name["process_resident_memory_bytes"]
    assert memory.entity == "cartservice"
    assert memory.unit == "By"
    assert memory.instance == "cartservice-7d4b9c8f6d-x2k4j"  # the pod, over the scrape address
    assert len(memory) == 3  # the sample at the window's end is outside [start, end)
    assert memory.values[0] == 104857600.0
    assert math.isnan(memory.values[2])
    count = by_name["http_server_request_duration_seconds_count"]
    assert count.unit == "1"
    assert count.timestamps.tolist() == [1714557600.5, 1714557615.5]
    assert count.instance == "cartservice-7d4b9c8f6d-q9wzt"


def test_raw_query_takes_entity_from_labels(prom: PrometheusConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        mock.get("/api/v1/query_range").mock(return_value=reply("prometheus", "query_range"))
        series = prom.query_range("anything", WINDOW)
    assert {s.entity for s in series} == {"cartservice"}  # job "shop/cartservice" and service_name


def test_all_metrics_of_an_entity_are_listed_first(make_client) -> None:
    prom = PrometheusConnector(make_client("prometheus", URL), max_metrics=2)
    with respx.mock(base_url=URL) as mock:
        names = mock.get("/api/v1/label/__name__/values").mock(
            return_value=reply("prometheus", "label_values")
        )
        query = mock.get("/api/v1/query_range").mock(return_value=reply("prometheus", "query_range"))
        series = prom.metrics("cartservice", WINDOW)
    sent = parse_qs(urlsplit(str(names.calls.last.request.url)).query)
    assert sent["match[]"] == [
        '{service_name="cartservice"}',
        '{service="cartservice"}',
        '{job=~"(.+/)?cartservice"}',
    ]
    promql = parse_qs(urlsplit(str(query.calls.last.request.url)).query)["query"][0]
    assert "|up" not in promql  # bounded by max_metrics=2
    assert len(series) == 2


def test_metric_names(prom: PrometheusConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        mock.get("/api/v1/label/__name__/values").mock(return_value=reply("prometheus", "label_values"))
        assert prom.metric_names("cartservice", WINDOW) == [
            "http_server_request_duration_seconds_count",
            "process_resident_memory_bytes",
            "up",
        ]


def test_status_error_body_is_reported_not_retried(prom: PrometheusConnector, sleeps) -> None:
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/query_range").mock(return_value=reply("prometheus", "bad_data"))
        with pytest.raises(BackendError) as err:
            prom.query_range("up{", WINDOW)
    assert err.value.backend == "prometheus"
    assert "HTTP 400" in err.value.reason
    assert "bad_data" in err.value.reason
    assert "parse error" in err.value.reason
    assert route.call_count == 1
    assert sleeps == []


def test_wrong_result_type_is_a_shape_error(prom: PrometheusConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        mock.get("/api/v1/query_range").mock(return_value=reply("prometheus", "vector_result"))
        with pytest.raises(BackendError, match=r"^prometheus: unexpected response shape .*'vector'"):
            prom.query_range("up", WINDOW)


@pytest.mark.parametrize(
    ("name", "unit"),
    [
        ("http_server_request_duration_seconds", "s"),
        ("http_server_request_duration_seconds_bucket", "s"),
        ("http_server_requests_total", "1"),
        ("http_server_request_duration_seconds_count", "1"),
        ("container_memory_working_set_bytes", "By"),
        ("process_cpu_seconds_total", "s"),
        ("up", ""),
    ],
)
def test_unit_from_name(name: str, unit: str) -> None:
    assert unit_from_name(name) == unit
