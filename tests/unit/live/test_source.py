"""LiveSource: configuration from a mapping, composition of connectors, topology, failure propagation."""

from __future__ import annotations

import httpx
import pytest
import respx

from rca.integrations.http import RetryPolicy
from rca.telemetry.live import LiveConfig, LiveSource
from rca.telemetry.model import EventKind, Modality, TelemetryError, TelemetrySource, TimeWindow
from tests.unit.integrations.recorded import WINDOW, Sleeps, exchange, reply

NOW = WINDOW.end
SETTINGS = {
    "timeout": 5,
    "retry": {"max_attempts": 2, "base_delay": 0.1},
    "prometheus": {"url": "http://prometheus:9090", "token": "prom-token-xyz", "max_signals": 10},
    "loki": {"url": "http://loki:3100", "username": "tenant", "password": "loki-pass-xyz"},
    "tempo": {"url": "http://tempo:3200", "max_traces": 10},
    "jaeger": {"url": ""},  # empty (an unset environment variable): not configured
    "kubernetes": {
        "url": "https://kubernetes.default.svc",
        "token": "k8s-token-xyz",
        "namespaces": ["shop"],
        "api": "v1",
    },
    "github": {"token": "ghp_token_xyz", "repo": "acme/shop", "paths": {"src/cartservice": "cartservice"}},
}


def _source(settings: dict, sleeps: Sleeps | None = None) -> LiveSource:
    return LiveSource(
        LiveConfig.from_mapping(settings),
        sleep=sleeps if sleeps is not None else Sleeps(),
        now=lambda: NOW,
        rng=lambda: 1.0,
    )


def test_config_from_a_plain_mapping() -> None:
    config = LiveConfig.from_mapping(SETTINGS)
    assert "jaeger" not in config.backends
    assert config.backends["github"].url == "https://api.github.com"
    assert config.retry == RetryPolicy(max_attempts=2, base_delay=0.1)
    assert config.timeout == 5.0
    assert config.backends["prometheus"].options == {"max_signals": 10}
    assert "xyz" not in repr(config)  # tokens and passwords stay out of reprs and logs


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"prometheus_url": "http://x"}, "unknown live telemetry setting"),
        ({"loki": {"url": "http://loki", "entity_lable": "app"}}, "loki: unknown setting"),
        ({"tempo": "http://tempo"}, "must be a mapping"),
        ({"topology_edges": [["a"]]}, "topology edge"),
        ({"retry": {"attempts": 3}}, "retry: .*attempts"),
    ],
)
def test_bad_settings_are_rejected(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LiveConfig.from_mapping(settings)


def test_modalities_follow_the_configured_backends() -> None:
    with _source(SETTINGS) as source:
        assert isinstance(source, TelemetrySource)
        assert source.modalities() == frozenset(Modality)
    with _source({"jaeger": {"url": "http://jaeger:16686"}}) as source:
        assert source.modalities() == {Modality.TRACES}
    with _source({}) as source:
        assert source.modalities() == frozenset()
        assert source.metrics("x", WINDOW) == []
        assert source.logs("x", WINDOW) == []
        assert source.spans(WINDOW) == []
        assert source.events(WINDOW) == []
        assert source.metric_names("x") == []
        assert source.topology().edges == ()


def test_windows() -> None:
    with _source({"horizon_seconds": 3600, "baseline_seconds": 1800, "baseline_gap_seconds": 60}) as source:
        assert source.time_range() == TimeWindow(NOW - 3600, NOW)
        assert source.baseline_window(1000.0) == TimeWindow(1000.0 - 60 - 1800, 1000.0 - 60)
    with _source({}) as source:
        # by default the hour up to the incident window's start, as the recorded engine reads it
        assert source.baseline_window(1000.0) == TimeWindow(1000.0 - 3600, 1000.0)


def _vector(*points: float) -> httpx.Response:
    result = [{"metric": {}, "value": [NOW, str(p)]} for p in points]
    return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": result}})


@pytest.mark.parametrize(
    ("newest", "present"),
    [
        ((NOW - 200.0,), NOW - 200.0 + 0.001),  # scrapes stalled 200 s ago: the data ends there
        ((NOW - 5.0,), NOW - 5.0 + 0.001),  # the usual: the last scrape, seconds ago
        ((NOW + 30.0,), NOW),  # a target clock ahead of ours: never past the wall clock
        ((), NOW),  # no `up` within the lookback (remote-written data): the wall clock
    ],
)
def test_the_present_is_prometheus_s_newest_scrape(newest: tuple[float, ...], present: float) -> None:
    settings = {"prometheus": {"url": "http://prometheus:9090"}}
    with _source(settings) as source, respx.mock() as mock:
        route = mock.get("http://prometheus:9090/api/v1/query").mock(return_value=_vector(*newest))
        assert source.present() == pytest.approx(present, abs=1e-6)
        assert source.time_range().end == source.present()
        assert source.baseline_window(NOW).end == NOW - source.config.baseline_gap_seconds
    # asked once per investigation, at the wall clock
    assert route.call_count == 1
    sent = route.calls.last.request.url.params
    assert sent["query"] == "max(timestamp(up))"
    assert float(sent["time"]) == NOW


def test_without_prometheus_or_when_it_fails_the_present_is_the_wall_clock() -> None:
    with _source({"loki": {"url": "http://loki:3100"}}) as source:
        assert source.present() == NOW
    settings = {"retry": {"max_attempts": 1}, "prometheus": {"url": "http://prometheus:9090"}}
    with _source(settings) as source, respx.mock() as mock:
        mock.get("http://prometheus:9090/api/v1/query").mock(return_value=httpx.Response(503))
        assert source.present() == NOW
        assert source.backend_states()["prometheus"].startswith("unreachable")


def _kubernetes_lists(mock: respx.MockRouter, *, empty: bool = False) -> None:
    """The Kubernetes API's Service and workload lists of namespace `shop` (empty ones: no edges)."""
    for kind in ("services", "deployments", "statefulsets", "daemonsets"):
        recorded = exchange("kubernetes", kind)
        listing = {**recorded["response"]["json"], "items": []} if empty else recorded["response"]["json"]
        mock.get(f"https://kubernetes.default.svc{recorded['request']['path']}").mock(
            return_value=httpx.Response(200, json=listing)
        )


def test_static_topology_is_the_last_resort() -> None:
    settings = {
        "kubernetes": SETTINGS["kubernetes"],
        "topology_edges": [["frontend", "cartservice", 3], {"caller": "cartservice", "callee": "redis"}],
    }
    with _source(settings) as source, respx.mock() as mock:
        _kubernetes_lists(mock, empty=True)
        graph = source.topology()
        assert len(mock.calls) == 4  # Kubernetes was asked first, and named no Service
    assert graph.origin == "static file (settings)"
    assert graph.has_edge("frontend", "cartservice")
    assert graph.callees("cartservice") == ["redis"]
    assert graph.names() == ["cartservice", "frontend", "redis"]


def test_topology_from_kubernetes_services_before_the_static_file_after_the_service_graph() -> None:
    settings = {
        "prometheus": {"url": "http://prometheus:9090"},
        "kubernetes": SETTINGS["kubernetes"],
        "topology_edges": [["frontend", "static-only"]],
    }
    empty = httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": []}})
    with _source(settings) as source, respx.mock() as mock:
        graph_query = mock.get("http://prometheus:9090/api/v1/query").mock(return_value=empty)
        pods = mock.get("http://prometheus:9090/api/v1/series").mock(
            return_value=httpx.Response(200, json={"status": "success", "data": []})
        )
        _kubernetes_lists(mock)
        graph = source.topology()
    # where the data ends (no scrape: the wall clock), then the service-graph metrics first: none
    assert graph_query.call_count == 2
    assert pods.call_count == 1  # services nobody called: kube-state-metrics lists none
    assert graph.origin == "Kubernetes Services' selectors (kubernetes)"
    assert graph.has_edge("frontend", "cartservice")
    assert graph.has_edge("cartservice", "redis-cart")
    assert not graph.has_edge("frontend", "static-only")


def test_the_graph_gains_the_services_beside_it_that_nobody_called() -> None:
    def vector(*rows: dict) -> httpx.Response:
        result = [{"metric": labels, "value": [NOW, str(value)]} for labels, value in rows]
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": result}}
        )

    def queried(request: httpx.Request) -> httpx.Response:
        if "service_graph" in request.url.params["query"]:
            return vector(({"client": "frontend", "server": "cart"}, 12.0))
        return vector()  # no scrape: the present is the wall clock

    pods = [
        {"__name__": "kube_pod_labels", "namespace": "shop", "pod": p, "label_app": p.split("-")[0]}
        for p in ("frontend-1a2b3-x2k4j", "cart-4c5d6-q9wzt", "ledger-7e8f9-abcde")
    ]
    with _source({"prometheus": {"url": "http://prometheus:9090"}}) as source, respx.mock() as mock:
        mock.get("http://prometheus:9090/api/v1/query").mock(side_effect=queried)
        mock.get("http://prometheus:9090/api/v1/series").mock(
            return_value=httpx.Response(200, json={"status": "success", "data": pods})
        )
        graph = source.topology()
    assert graph.origin == "service-graph metrics (prometheus)"
    assert graph.names() == ["cart", "frontend", "ledger"]
    assert graph.callers("ledger") == []
    assert graph.callees("ledger") == []
    assert [(e.caller, e.callee) for e in graph.edges] == [("frontend", "cart")]


def test_an_unreachable_kubernetes_is_passed_over_and_its_state_kept() -> None:
    settings = {
        "retry": {"max_attempts": 1},
        "kubernetes": SETTINGS["kubernetes"],
        "topology_edges": [["a", "b"]],
    }
    with _source(settings) as source, respx.mock() as mock:
        mock.get("https://kubernetes.default.svc/api/v1/namespaces/shop/services").mock(
            return_value=reply("kubernetes", "forbidden")
        )
        graph = source.topology()
        states = source.backend_states()
    assert graph.origin == "static file (settings)"
    assert states["kubernetes"].startswith(
        "unreachable: GET https://kubernetes.default.svc/api/v1/namespaces/shop/services"
    )
    assert "HTTP 403" in states["kubernetes"]


def test_topology_from_recent_spans() -> None:
    with (
        _source({"tempo": {"url": "http://tempo:3200"}, "recent_seconds": 600}) as source,
        respx.mock(base_url="http://tempo:3200") as mock,
    ):
        search = mock.get("/api/search").mock(return_value=reply("tempo", "search"))
        mock.get("/api/traces/4bf92f3577b34da6a3ce929d0e0e4736").mock(return_value=reply("tempo", "trace_v1"))
        mock.get("/api/traces/00000000000000001a2b3c4d5e6f7081").mock(return_value=reply("tempo", "trace_v2"))
        graph = source.topology()
        assert source.topology() is graph  # cached for the source's lifetime
    assert search.call_count == 1
    assert search.calls.last.request.url.params["start"] == "1714557600"
    assert graph.has_edge("frontend", "cartservice")
    assert graph.has_edge("checkoutservice", "paymentservice")
    assert graph.origin == "traces (tempo)"


def test_events_merge_kubernetes_and_github_in_time_order() -> None:
    settings = {k: SETTINGS[k] for k in ("kubernetes", "github")}
    with _source(settings) as source, respx.mock(assert_all_called=False) as mock:
        mock.get("https://kubernetes.default.svc/api/v1/namespaces/shop/events").mock(
            return_value=reply("kubernetes", "core_events")
        )
        api = "https://api.github.com/repos/acme/shop"
        mock.get(f"{api}/commits", params__contains={"page": "2"}).mock(
            return_value=reply("github", "commits_page2")
        )
        mock.get(f"{api}/commits", params__contains={"path": "src/cartservice"}).mock(
            return_value=reply("github", "commits_cart_path")
        )
        mock.get(f"{api}/commits").mock(return_value=reply("github", "commits_page1"))
        mock.get(f"{api}/pulls").mock(return_value=reply("github", "pulls_page1"))
        mock.get(f"{api}/pulls/101/files").mock(return_value=reply("github", "pull_files"))
        events = source.events(WINDOW, entity="cartservice")
    assert [e.time for e in events] == sorted(e.time for e in events)
    kinds = [e.kind for e in events]
    assert kinds == [EventKind.POD_RESTART, EventKind.POD_RESTART, EventKind.COMMIT, EventKind.PULL_REQUEST]


def test_a_failing_backend_is_not_swallowed() -> None:
    sleeps = Sleeps()
    settings = {k: SETTINGS[k] for k in ("retry", "kubernetes", "github")}
    with _source(settings, sleeps) as source, respx.mock(assert_all_called=False) as mock:
        mock.get("https://kubernetes.default.svc/api/v1/namespaces/shop/events").mock(
            return_value=reply("kubernetes", "core_events")
        )
        mock.get("https://api.github.com/repos/acme/shop/commits").mock(
            return_value=reply("github", "unavailable")
        )
        with pytest.raises(TelemetryError) as err:
            source.events(WINDOW)
    assert err.value.backend == "github"
    assert "after 2 attempts" in err.value.reason
    assert "Server Error" in err.value.reason
    assert sleeps == [0.1]  # the configured retry policy reached the client


def test_queries_reach_their_connectors() -> None:
    with _source(SETTINGS) as source, respx.mock(assert_all_called=False) as mock:
        mock.get("http://prometheus:9090/api/v1/query_range").mock(
            return_value=reply("prometheus", "query_range")
        )
        mock.get("http://prometheus:9090/api/v1/label/__name__/values").mock(
            return_value=reply("prometheus", "label_values")
        )
        nothing = {"status": "success", "data": []}
        mock.get("http://prometheus:9090/api/v1/series").mock(return_value=httpx.Response(200, json=nothing))
        mock.get("http://prometheus:9090/api/v1/metadata").mock(
            return_value=httpx.Response(200, json=nothing)
        )
        mock.get("http://prometheus:9090/api/v1/query").mock(
            return_value=httpx.Response(
                200, json={"status": "success", "data": {"resultType": "vector", "result": []}}
            )
        )
        loki = mock.get("http://loki:3100/loki/api/v1/query_range").mock(
            return_value=reply("loki", "query_range")
        )
        mock.get("http://tempo:3200/api/search").mock(return_value=reply("tempo", "search_empty"))
        assert len(source.metrics("cartservice", WINDOW, ["process_resident_memory_bytes"])) == 2
        # a scrape's own series (`up`) describe the scrape, not the service
        names = source.metric_names("cartservice")
        assert "process_resident_memory_bytes" in names
        assert "up" not in names
        assert len(source.logs("cartservice", WINDOW, limit=3)) == 3
        assert source.spans(WINDOW, "cartservice") == []
    assert loki.calls.last.request.headers["authorization"].startswith("Basic ")


def test_an_alerts_condition_is_traced_through_prometheus_only() -> None:
    with _source({"tempo": {"url": "http://tempo:3200"}}) as source:
        assert source.condition_since("up == 0", {}, NOW) is None  # no metrics backend to ask
    settings = {"retry": {"max_attempts": 1}, "prometheus": {"url": "http://prometheus:9090"}}
    with _source(settings) as source, respx.mock(base_url="http://prometheus:9090") as mock:
        mock.get("/api/v1/query_range").mock(return_value=httpx.Response(503))
        assert source.condition_since("up == 0", {}, NOW) is None  # the firing time stands
        assert source.backend_states()["prometheus"].startswith("unreachable")


def test_span_metrics_are_read_through_prometheus_only() -> None:
    with _source({"tempo": {"url": "http://tempo:3200"}}) as source:
        assert source.span_coverage(WINDOW, 60.0) == []
        assert source.operation_durations(WINDOW) == []
    settings = {"retry": {"max_attempts": 1}, "prometheus": {"url": "http://prometheus:9090"}}
    with _source(settings) as source, respx.mock(base_url="http://prometheus:9090") as mock:
        mock.get("/api/v1/query").mock(return_value=httpx.Response(503))
        with pytest.raises(TelemetryError):
            source.operation_durations(WINDOW)
