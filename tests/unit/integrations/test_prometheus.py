"""Prometheus connector against recorded /api/v1 exchanges."""

from __future__ import annotations

import math
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import httpx
import numpy as np
import pytest
import respx

from rca.integrations.http import BackendError
from rca.integrations.prometheus.connector import PrometheusConnector, bucket_widths, unit_from_name
from rca.integrations.prometheus.signals import MetricType, signals_for
from rca.telemetry.model import TimeWindow

from .recorded import WINDOW, reply

URL = "http://prometheus:9090"


@pytest.fixture
def prom(make_client) -> PrometheusConnector:
    return PrometheusConnector(make_client("prometheus", URL))


def test_matrix_becomes_series_of_the_entity(prom: PrometheusConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/query_range").mock(return_value=reply("prometheus", "query_range"))
        series = prom.query_range("anything", WINDOW, entity="cartservice")
    query = parse_qs(urlsplit(str(route.calls.last.request.url)).query)
    assert query["step"] == ["15"]
    assert query["start"] == ["1714557600.000"]

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


def _discovery(mock: respx.MockRouter, failures: bool = True) -> dict[str, respx.Route]:
    """Routes for what discovery asks before any series: owners, names, types, the scrape interval, and
    whether the store records failures (`failures`)."""
    empty = httpx.Response(200, json={"status": "success", "data": []})
    metadata = {"up": [{"type": "gauge", "help": "", "unit": ""}]}
    return {
        "series": mock.get("/api/v1/series").mock(return_value=empty),
        "names": mock.get("/api/v1/label/__name__/values").mock(
            return_value=reply("prometheus", "label_values")
        ),
        "metadata": mock.get("/api/v1/metadata").mock(
            return_value=httpx.Response(200, json={"status": "success", "data": metadata})
        ),
        "probe": mock.get("/api/v1/query").mock(side_effect=_instant(failures=failures)),
    }


def _instant(failures: bool) -> Callable[[httpx.Request], httpx.Response]:
    """Instant queries: whether failure series exist (`failures`); nothing for the scrape probe."""

    def answer(request: httpx.Request) -> httpx.Response:
        found = failures and request.url.params["query"].startswith("group(present_over_time(")
        return _vector_reply("1" if found else None)

    return answer


def _vector_reply(value: str | None) -> httpx.Response:
    """An instant query's answer: one series at `value`, or none."""
    result = [{"metric": {}, "value": [WINDOW.end, value]}] if value is not None else []
    return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": result}})


def test_discovery_selects_by_service_labels_and_by_the_workloads_pods(prom: PrometheusConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        routes = _discovery(mock)
        names = prom.metric_names("cartservice", WINDOW)
    sent = parse_qs(urlsplit(str(routes["names"].calls.last.request.url)).query)
    assert sent["match[]"][:3] == [
        '{service_name="cartservice"}',
        '{service="cartservice"}',
        '{job=~"(.+/)?cartservice"}',
    ]
    # no owner references: the pods the Deployment / StatefulSet naming convention gives
    assert sent["match[]"][-3].startswith('{pod=~"cartservice-[bcdfghjklmnpqrstvwxz2456789]{6,10}-')
    # the service graph's calls it makes and those it serves
    assert sent["match[]"][-2:] == ['{client="cartservice"}', '{server="cartservice"}']
    # the histogram's convention first, under the tools' names; the rest by type
    assert names == [
        "latency_p99",
        "latency_p50",
        "error_ratio",
        "requests_per_second",
        "process_resident_memory_bytes",
    ]  # not `up`: Prometheus's record of each scrape, not a measure of the service


def test_a_failed_share_is_no_signal_where_no_failure_was_ever_recorded(prom: PrometheusConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        routes = _discovery(mock, failures=False)
        names = prom.metric_names("cartservice", WINDOW)
    # no 5xx series of any service in the window: a share of 0 would be a guess, not a measurement
    assert "error_ratio" not in names
    assert {"latency_p99", "latency_p50", "requests_per_second"} <= set(names)
    asked = [c.request.url.params["query"] for c in routes["probe"].calls]
    status = 'http_response_status_code=~"5.."'
    assert (
        f"group(present_over_time(http_server_request_duration_seconds_count{{{status}}}[600s]))" in asked
    )  # the window asked about


def test_all_signals_of_an_entity_go_in_one_query(prom: PrometheusConnector) -> None:
    with respx.mock(base_url=URL) as mock:
        _discovery(mock)
        query = mock.get("/api/v1/query_range").mock(return_value=reply("prometheus", "query_range_empty"))
        prom.metrics("cartservice", WINDOW)
    promql = parse_qs(urlsplit(str(query.calls.last.request.url)).query)["query"][0]
    # five signals, and the bucket bounds of the two latency quantiles (their values' resolution)
    assert promql.count('"rootline_signal"') == 5
    assert promql.count('"rootline_bounds_of"') == 2
    assert "group by (le) (http_server_request_duration_seconds_bucket{" in promql
    # at the scrape interval (15 s), each interval's rate: no burst is spread over the rate window
    quantile = "histogram_quantile(0.99, sum by (le) (irate(http_server_request_duration_seconds_bucket{"
    assert quantile in promql  # the service's: pods split its requests, their tails hop buckets
    assert "sum by (k8s_pod_name)(irate(http_server_request_duration_seconds_count{" in promql  # 5xx share
    assert 'http_response_status_code=~"5.."' in promql
    assert "sum(process_resident_memory_bytes{" in promql  # a gauge as it is


def test_a_quantile_is_known_to_the_width_of_the_bucket_it_falls_in() -> None:
    bounds = [0.005, 0.01, 0.05, float("inf")]  # `+Inf` is no width
    values = np.array([0.003, 0.01, 0.02, 0.05, np.nan])
    widths = bucket_widths(values, bounds)
    assert widths[:4] == pytest.approx([0.005, 0.005, 0.04, 0.04])  # (0, 5 ms], (5, 10], (10, 50] ms
    assert math.isnan(widths[4])
    assert np.isnan(bucket_widths(values, [float("inf")])).all()  # no finite bound: unknown


def test_each_quantile_point_carries_its_buckets_width_from_the_same_query(prom: PrometheusConnector) -> None:
    t0 = WINDOW.start

    def matrix(labels: dict[str, str], values: list[str]) -> dict[str, object]:
        return {"metric": labels, "values": [[t0 + 15 * i, v] for i, v in enumerate(values)]}

    body = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                matrix({"rootline_signal": "latency_p99"}, ["0.02", "0.3"]),
                matrix({"rootline_signal": "requests_per_second"}, ["10", "10"]),
                *(
                    matrix({"rootline_bounds_of": "latency_p99", "le": le}, ["1", "1"])
                    for le in ("0.01", "0.05", "0.25", "0.5", "+Inf")
                ),
            ],
        },
    }
    with respx.mock(base_url=URL) as mock:
        _discovery(mock)
        mock.get("/api/v1/query_range").mock(return_value=httpx.Response(200, json=body))
        series = {s.name: s for s in prom.metrics("cartservice", WINDOW)}
    assert set(series) == {"latency_p99", "requests_per_second"}  # the bounds are no series
    assert series["latency_p99"].resolution.tolist() == pytest.approx([0.04, 0.25])
    assert series["requests_per_second"].resolution is None  # a rate is measured as it is


def test_a_coarser_step_reads_each_steps_average_rate(prom: PrometheusConnector) -> None:
    day = TimeWindow(WINDOW.end - 86_400, WINDOW.end)
    with respx.mock(base_url=URL) as mock:
        _discovery(mock)
        query = mock.get("/api/v1/query_range").mock(return_value=reply("prometheus", "query_range_empty"))
        prom.metrics("cartservice", day)
    sent = query.calls.last.request.url.params
    assert sent["step"] == "87"  # a day in at most 1000 points
    assert "sum by (le) (rate(http_server_request_duration_seconds_bucket{" in sent["query"]
    assert "[102s]" in sent["query"]  # the step and a scrape
    assert "irate(" not in sent["query"]


def test_the_calls_an_entity_serves_are_read_from_the_service_graph_by_its_server_label(
    prom: PrometheusConnector,
) -> None:
    graph = [
        "traces_service_graph_request_total",
        "traces_service_graph_request_failed_total",
        "traces_service_graph_request_server_seconds_bucket",
        "traces_service_graph_request_client_seconds_bucket",
    ]
    with respx.mock(base_url=URL) as mock:
        routes = _discovery(mock)
        routes["names"].mock(return_value=httpx.Response(200, json={"status": "success", "data": graph}))
        query = mock.get("/api/v1/query_range").mock(return_value=reply("prometheus", "query_range_empty"))
        names = prom.metric_names("cartservice", WINDOW)
        prom.metrics("cartservice", WINDOW)
    assert names == [
        "call_latency_p99",
        "call_latency_p50",
        "call_error_ratio",
        "call_requests_per_second",
        "client_call_latency_p99",
        "client_call_latency_p50",
    ]
    probe = routes["probe"].calls.last.request.url.params["query"]
    server = 'traces_service_graph_request_server_seconds_bucket{server="cartservice"}'
    assert probe == f"max(count_over_time({server}[1200s]))"
    promql = query.calls.last.request.url.params["query"]
    assert promql.count('"rootline_signal"') == 6
    assert promql.count('"rootline_bounds_of"') == 4  # the four quantiles' bucket bounds
    # never the entity's own labels: the service graph's, and the edge series' name patterns
    assert promql.count("{server=") + promql.count("{client=") + promql.count("{caller=") == promql.count("{")
    assert f"histogram_quantile(0.99, sum by (le) (irate({server}[60s])))" in promql
    assert 'sum(irate(traces_service_graph_request_failed_total{server="cartservice"}[60s]))' in promql


def test_services_are_every_pod_s_service_in_the_namespaces_of_those_beside(
    prom: PrometheusConnector,
) -> None:
    ksm = {"job": "kube-state-metrics"}
    rows = [
        # a service label names the service, over its workload (two Deployments of one service)
        {
            "__name__": "kube_pod_labels",
            **ksm,
            "namespace": "shop",
            "pod": "cart-v1-7d4b9-x2k4j",
            "label_app": "cart",
        },
        {
            "__name__": "kube_pod_labels",
            **ksm,
            "namespace": "shop",
            "pod": "cart-v2-5f6a1-q9wzt",
            "label_app": "cart",
        },
        # no service label: the Deployment that owns its ReplicaSet, or a StatefulSet directly
        {"__name__": "kube_pod_labels", **ksm, "namespace": "shop", "pod": "ledger-6c8d-abcde"},
        {
            "__name__": "kube_pod_owner",
            **ksm,
            "namespace": "shop",
            "pod": "ledger-6c8d-abcde",
            "owner_kind": "ReplicaSet",
            "owner_name": "ledger-6c8d",
        },
        {
            "__name__": "kube_replicaset_owner",
            **ksm,
            "namespace": "shop",
            "replicaset": "ledger-6c8d",
            "owner_kind": "Deployment",
            "owner_name": "ledger",
        },
        {
            "__name__": "kube_pod_owner",
            **ksm,
            "namespace": "shop",
            "pod": "redis-cart-0",
            "owner_kind": "StatefulSet",
            "owner_name": "redis-cart",
        },
        # another namespace's pods are not beside the shop's services
        {
            "__name__": "kube_pod_owner",
            **ksm,
            "namespace": "kube-system",
            "pod": "coredns-5d78c-zzzzz",
            "owner_kind": "ReplicaSet",
            "owner_name": "coredns-5d78c",
        },
    ]
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/series").mock(
            return_value=httpx.Response(200, json={"status": "success", "data": rows})
        )
        services = prom.services(WINDOW, ["cart", "frontend"])
        nowhere = prom.services(WINDOW, ["unknown"])
    assert services == ["cart", "ledger", "redis-cart"]
    assert nowhere == []
    sent = route.calls.last.request.url.params
    assert sent.get_list("match[]") == ["kube_pod_labels", "kube_pod_owner", "kube_replicaset_owner"]
    assert sent["start"] == f"{WINDOW.start:.3f}"


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


def _matrix(*series: tuple[dict[str, str], list[float]]) -> httpx.Response:
    result = [{"metric": labels, "values": [[t, "1"] for t in times]} for labels, times in series]
    return httpx.Response(200, json={"status": "success", "data": {"resultType": "matrix", "result": result}})


def test_an_alerts_condition_is_traced_back_to_when_it_began_to_hold(prom: PrometheusConnector) -> None:
    at = WINDOW.end
    alert = {"alertname": "LatencyP99Anomaly", "service_name": "frontend", "severity": "critical"}
    held = [at - 15 * k for k in range(20, -1, -1)]  # the last five minutes, every evaluation
    earlier = [at - 900.0, at - 885.0]  # an earlier spell, ended by a break
    other = [at - 1500.0 + 15 * k for k in range(100)]  # another service's series: not this alert's
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/query_range").mock(
            return_value=_matrix(
                ({"service_name": "frontend"}, earlier + held),
                ({"service_name": "cartservice"}, other),
            )
        )
        since = prom.condition_since("some_expr > 4", alert, at)
        sent = route.calls.last.request.url.params
        assert (sent["query"], sent["step"], float(sent["start"])) == ("some_expr > 4", "15", at - 1800)
        assert since == at - 300

        route.mock(return_value=_matrix(({"service_name": "frontend"}, [at - 600.0, at - 585.0])))
        assert prom.condition_since("some_expr > 4", alert, at) is None  # it no longer holds at `at`


def test_the_wait_on_each_callee_is_one_edge_series_each(prom: PrometheusConnector) -> None:
    graph = ["traces_service_graph_request_total", "traces_service_graph_request_client_seconds_bucket"]

    def matrix(request: httpx.Request) -> httpx.Response:
        edge = "client_call_latency_p50{caller=frontend,callee=%s}"
        result = [
            {"metric": {"server": callee, "rootline_signal": edge % callee}, "values": [[WINDOW.start, v]]}
            for callee, v in (("adservice", "0.02"), ("cartservice", "0.4"))
        ] + [
            {
                "metric": {"le": le, "server": "adservice", "rootline_bounds_of": edge % "adservice"},
                "values": [[WINDOW.start, "1"]],
            }
            for le in ("0.01", "0.05", "+Inf")
        ]
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "matrix", "result": result}}
        )

    with respx.mock(base_url=URL) as mock:
        routes = _discovery(mock)
        routes["names"].mock(return_value=httpx.Response(200, json={"status": "success", "data": graph}))
        query = mock.get("/api/v1/query_range").mock(side_effect=matrix)
        found = prom.metrics(
            "frontend", WINDOW, ["client_call_latency_p50{caller=frontend,callee=adservice}"]
        )
    promql = query.calls.last.request.url.params["query"]
    client = 'traces_service_graph_request_client_seconds_bucket{client="frontend"}'
    assert f"histogram_quantile(0.5, sum by (le, server) (irate({client}[60s])))" in promql
    # each edge's series is named by the callee its `server` label holds
    assert (
        '"rootline_signal", "client_call_latency_p50{caller=frontend,callee=$1}", "server", "(.+)")' in promql
    )
    assert f"group by (le, server) ({client})" in promql
    (series,) = found  # only the edge asked for
    assert series.name == "client_call_latency_p50{caller=frontend,callee=adservice}"
    assert series.unit == "s"
    assert series.resolution is not None
    assert series.resolution.tolist() == pytest.approx([0.04])


def test_the_scrape_interval_comes_from_up_before_the_entitys_own_series(prom: PrometheusConnector) -> None:
    """`up` is written at every scrape, so its count is the scrape's even where the entity's own series
    has missing minutes (9 samples in 20 minutes would read as a 133 s scrape)."""

    def instant(request: httpx.Request) -> httpx.Response:
        query = request.url.params["query"]
        count = "20" if "count_over_time(up{" in query else "9"
        return _vector_reply(count if "count_over_time(" in query else None)

    with respx.mock(base_url=URL) as mock:
        routes = _discovery(mock)
        routes["probe"].mock(side_effect=instant)
        prom.metric_names("cartservice", WINDOW)
    assert prom.scrape_interval == 60.0
    asked = [
        c.request.url.params["query"]
        for c in routes["probe"].calls
        if "count_over_time" in c.request.url.params["query"]
    ]
    assert len(asked) == 1  # `up` answered
    assert asked[0].startswith('max(count_over_time(up{service_name="cartservice"}[1200s]) or ')


def test_without_up_the_scrape_interval_comes_from_the_entitys_densest_series(
    prom: PrometheusConnector,
) -> None:
    def instant(request: httpx.Request) -> httpx.Response:
        query = request.url.params["query"]
        return _vector_reply("80" if "count_over_time(" in query and "up{" not in query else None)

    with respx.mock(base_url=URL) as mock:
        routes = _discovery(mock)
        routes["probe"].mock(side_effect=instant)
        prom.metric_names("cartservice", WINDOW)
    assert prom.scrape_interval == 15.0  # data remote-written, no `up`: 80 samples in 20 minutes


def test_a_summary_is_read_per_pod_and_a_histogram_beside_it_comes_first() -> None:
    timer = {
        "http_server_requests_seconds",
        "http_server_requests_seconds_count",
        "http_server_requests_seconds_sum",
    }
    found = {s.name: s for s in signals_for(timer, {})}
    assert set(found) == {
        "latency_p99",
        "latency_p95",
        "latency_p90",
        "latency_p50",
        "error_ratio",
        "requests_per_second",
    }
    assert found["latency_p90"].expr == 'max by (pod) (http_server_requests_seconds{{sel}, quantile="0.9"})'
    assert found["requests_per_second"].expr.startswith("sum by (pod)(")  # the volume of each pod's quantiles
    # an entity exporting the OpenTelemetry histogram too is read through it, one signal per name
    otel = {"http_server_request_duration_seconds_bucket", "http_server_request_duration_seconds_count"}
    both = signals_for(timer | otel, {})
    assert len({s.name for s in both}) == len(both)
    assert {s.source for s in both if s.name in ("latency_p99", "error_ratio")} == {
        "http_server_request_duration_seconds_count"
    }
    # a summary no convention names, told from a gauge by its metadata
    gc = signals_for(
        {"jvm_gc_pause_seconds", "jvm_gc_pause_seconds_count"}, {"jvm_gc_pause_seconds": MetricType.SUMMARY}
    )
    assert [s.name for s in gc] == [f"jvm_gc_pause_seconds_p{p}" for p in (50, 90, 95, 99)]
