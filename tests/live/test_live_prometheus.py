"""The live path's reading of Prometheus, against a real Prometheus: counters as rates, histograms as
quantiles over their buckets, types from the metadata API, pods to their workload, discovery by relevance
within a query budget, topology from service-graph metrics, and "nothing was examined" without backends."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from rca.integrations.http import BackendError, HttpClient, RetryPolicy
from rca.integrations.prometheus.connector import PrometheusConnector
from rca.integrations.prometheus.signals import MetricType, metric_type, type_from_name
from rca.investigation.engine import EngineConfig, investigate
from rca.telemetry.live.source import LiveConfig, LiveSource
from rca.telemetry.model import Alert, Event, EventKind, Modality, TimeWindow
from rca.telemetry.replay.conventions import write_rollouts
from rca.telemetry.replay.histograms import COLLECTOR_BOUNDS_MS
from rca.telemetry.replay.openmetrics import Exposition, Family, Kind
from rca.telemetry.replay.replay import backfill
from rca.telemetry.replay.servers import Server
from rca.telemetry.replay.spans import SPAN_CALLS, SPAN_DURATION
from rca.tools.base import ToolContext
from rca.tools.metrics.profile import spans_disown
from rca.tools.span_metrics import COVERAGE_STEP, duration_z
from rca.tools.stats import KNEE, Direction, deviation
from rca.tools.stats import Family as MetricFamily
from tests.conftest import free_port
from tests.live.conftest import StartPrometheus

pytestmark = [pytest.mark.integration]

STEP = 15.0  # the synthetic cluster's scrape interval
HOUR = 3600.0
FAULT = 600.0  # the last ten minutes: checkout's CPU triples, frontend's errors and latency rise
POD = "checkout-7d9fbc5c4b-x2x4z"
REPLICASET = "checkout-7d9fbc5c4b"
PAYMENT_PODS = ("payment-6f7d8c9b5d-k2m4p", "payment-6f7d8c9b5d-q9w8e")
# A second Deployment of the same service (a canary release): its pods reach it by their label only.
CANARY = "checkout-canary-5f6d7c8b9a-q7w8e"
NAMESPACE = "shop"
INVENTORY_PODS = ("inventory-5c4b7d9f8d-a1b2c", "inventory-5c4b7d9f8d-d3e4f")
BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


def cluster(now: float) -> Exposition:
    """Two services under real conventions: checkout's containers (cAdvisor, kube-state-metrics) and the
    frontend's OpenTelemetry HTTP histogram, the service graph between them, and one metric of no
    convention."""
    times = np.arange(now - 2 * HOUR, now + 1, STEP)
    faulty = times >= now - FAULT
    expo = Exposition()
    pod = {"namespace": NAMESPACE, "pod": POD}
    cpu = Family("container_cpu_usage_seconds", Kind.COUNTER, "CPU seconds")
    expo.add(cpu, {**pod, "container": "checkout"}, times, np.where(faulty, 0.6, 0.2) * STEP)
    memory = Family("container_memory_working_set_bytes", Kind.GAUGE, "working set")
    expo.add(memory, {**pod, "container": "checkout"}, times, np.full(times.size, 2.0e8))
    owner = Family("kube_pod_owner", Kind.GAUGE, "pod owner")
    expo.add(owner, {**pod, "owner_kind": "ReplicaSet", "owner_name": REPLICASET}, times, np.ones(times.size))
    rs_owner = Family("kube_replicaset_owner", Kind.GAUGE, "replica set owner")
    expo.add(
        rs_owner,
        {
            "namespace": NAMESPACE,
            "replicaset": REPLICASET,
            "owner_kind": "Deployment",
            "owner_name": "checkout",
        },
        times,
        np.ones(times.size),
    )
    http = Family("http_server_request_duration_seconds", Kind.HISTOGRAM, "server duration", bounds=BOUNDS)
    requests = 10 * STEP  # 10 requests per second
    fast = np.zeros((times.size, len(BOUNDS) + 1))
    fast[:, 2] = np.where(faulty, 0.5, 1.0) * requests  # up to 25 ms
    fast[:, 8] = np.where(faulty, 0.5, 0.0) * requests  # 1 - 2.5 s during the fault
    ok = {"service_name": "frontend", "http_response_status_code": "200"}
    expo.add_histogram(http, ok, times, fast * np.where(faulty, 0.8, 1.0)[:, None], fast.sum(axis=1) * 0.02)
    failed = np.zeros_like(fast)
    failed[:, 2] = np.where(faulty, 0.2 * requests, 0.0)
    expo.add_histogram(
        http, {**ok, "http_response_status_code": "500"}, times, failed, failed.sum(axis=1) * 0.02
    )
    # payment's two pods, each its own series (the Collector's k8sattributes): only the second fails
    for n, pod_name in enumerate(PAYMENT_PODS):
        labels = {"service_name": "payment", "k8s_pod_name": pod_name, "http_response_status_code": "200"}
        share = np.where(faulty, 0.5, 1.0) if n else np.ones(times.size)
        expo.add_histogram(http, labels, times, fast * share[:, None], fast.sum(axis=1) * 0.02)
        if n:
            expo.add_histogram(
                http,
                {**labels, "http_response_status_code": "500"},
                times,
                fast * (1 - share)[:, None],
                fast.sum(axis=1) * 0.0,
            )
    graph = Family("traces_service_graph_request", Kind.COUNTER, "service graph requests")
    expo.add(graph, {"client": "frontend", "server": "checkout"}, times, np.full(times.size, requests))
    labels = Family("kube_pod_labels", Kind.GAUGE, "pod labels")
    expo.add(labels, {**pod, "label_app": "checkout"}, times, np.ones(times.size))
    canary = {"namespace": NAMESPACE, "pod": CANARY}
    expo.add(labels, {**canary, "label_app": "checkout"}, times, np.ones(times.size))
    canary_set = CANARY.rsplit("-", 1)[0]
    expo.add(
        owner, {**canary, "owner_kind": "ReplicaSet", "owner_name": canary_set}, times, np.ones(times.size)
    )
    expo.add(
        rs_owner,
        {
            "namespace": NAMESPACE,
            "replicaset": canary_set,
            "owner_kind": "Deployment",
            "owner_name": "checkout-canary",
        },
        times,
        np.ones(times.size),
    )
    expo.add(memory, {**canary, "container": "checkout"}, times, np.full(times.size, 1.0e8))
    # checkout's ReplicaSet is a rollout made when the fault began (kube_replicaset_created)
    rollout = Event(now - FAULT, "checkout", EventKind.DEPLOY, "rollout", reference="v2", instance=POD)
    # and cart's canary Deployment began one whose pods have no telemetry yet: its labels name cart
    canary_rollout = Event(now - FAULT, "cart", EventKind.DEPLOY, "rollout", reference="canary-6b7c8d9f5")
    write_rollouts(expo, NAMESPACE, [rollout, canary_rollout], 0.0, lambda t: times[times >= t])
    orders = Family("orders_processed", Kind.COUNTER, "orders")
    expo.add(orders, {"service_name": "checkout"}, times, np.full(times.size, 3.0 * STEP))
    # a Spring Boot service's Micrometer timer with percentiles 0.9 and 0.99 (a summary: its quantiles a
    # gauge per quantile, its count a running total), as a ServiceMonitor scrapes it: the second pod's
    # tail rises and a tenth of its requests fail
    quantile = Family("http_server_requests_seconds", Kind.GAUGE, "timer")
    count = Family("http_server_requests_seconds_count", Kind.GAUGE, "timer count")
    for n, pod_name in enumerate(INVENTORY_PODS):
        service = {"namespace": NAMESPACE, "pod": pod_name, "service": "inventory", "job": "inventory"}
        p90 = np.where(faulty & (n == 1), 0.8, 0.05)
        calls = np.full(times.size, 4.0 * STEP)
        failing = np.where(faulty & (n == 1), 0.1, 0.0) * calls
        for status, served in (("200", calls - failing), ("500", failing)):
            labels = {**service, "status": status}
            for q, value in (("0.9", p90), ("0.99", p90 * 2)):
                expo.add(quantile, {**labels, "quantile": q}, times, value)
            expo.add(count, labels, times, np.cumsum(served))
    write_span_metrics(expo, times, faulty)
    return expo


SLOW_OPERATION = ("ledger", "GET /entries")
FLAT_OPERATIONS = tuple((service, "GET /") for service in ("gateway", "auth", "search", "ads", "mail"))
NORMAL_SPANS = (5400.0, 4800.0)  # seconds before now: the one stretch of spans before the fault


def write_span_metrics(expo: Exposition, times: np.ndarray, faulty: np.ndarray) -> None:
    """The span metrics connector's series, kept for two stretches only (as a recording's span files):
    ten normal minutes well before the baseline hour, and the fault. Every operation takes 10 - 50 ms,
    but ledger's slows to 200 - 400 ms in the fault."""
    kept = faulty | ((times >= times[-1] - NORMAL_SPANS[0]) & (times < times[-1] - NORMAL_SPANS[1]))
    at, slow = times[kept], faulty[kept]
    calls = 2.0 * STEP  # 2 spans a second
    for service, operation in (SLOW_OPERATION, *FLAT_OPERATIONS):
        labels = {
            "service_name": service,
            "span_name": operation,
            "span_kind": "SPAN_KIND_SERVER",
            "status_code": "STATUS_CODE_UNSET",
        }
        buckets = np.zeros((at.size, len(COLLECTOR_BOUNDS_MS) + 1))
        late = slow if (service, operation) == SLOW_OPERATION else np.zeros(at.size, dtype=bool)
        buckets[:, COLLECTOR_BOUNDS_MS.index(50.0)] = np.where(late, 0.0, calls)
        buckets[:, COLLECTOR_BOUNDS_MS.index(400.0)] = np.where(late, calls, 0.0)
        expo.add_histogram(SPAN_DURATION, labels, at, buckets, calls * np.where(late, 300.0, 30.0))
        expo.add(SPAN_CALLS, labels, at, np.full(at.size, calls))


@pytest.fixture(scope="module")
def now() -> float:
    return float(np.floor(time.time() / STEP) * STEP) - STEP


@pytest.fixture
def prom(prometheus: StartPrometheus, tmp_path: Path, now: float) -> Server:
    text = tmp_path / "cluster.om"
    with text.open("w") as out:
        cluster(now).write(out)
    tsdb = tmp_path / "tsdb"
    backfill(text, tsdb)
    config = tmp_path / "prometheus.yml"
    config.write_text("global: {evaluation_interval: 15s}\n")
    return prometheus(config, tsdb, {"--storage.tsdb.retention.time": "30d"})


def connector(server: Server, **options: object) -> PrometheusConnector:
    client = HttpClient("prometheus", server.url, timeout=10.0, retry=RetryPolicy(max_attempts=1))
    return PrometheusConnector(client, **options)  # type: ignore[arg-type]


def recent(now: float) -> TimeWindow:
    return TimeWindow(now - 2 * HOUR + 600, now + 1)


def test_a_counter_is_read_as_its_rate_and_scores_its_tripling(prom: Server, now: float) -> None:
    prometheus = connector(prom)
    window = recent(now)
    (cpu,) = prometheus.metrics("checkout", window, ["cpu_usage_cores"])
    assert prometheus.scrape_interval == pytest.approx(STEP)  # measured from the raw samples
    before = cpu.values[cpu.timestamps < now - FAULT - 120]
    during = cpu.values[cpu.timestamps >= now - FAULT + 120]
    assert np.median(before) == pytest.approx(0.2, rel=0.01)
    assert np.median(during) == pytest.approx(0.6, rel=0.01)
    found = deviation(before, during, Direction.UP)
    assert found is not None
    assert found.z > 50


def test_a_histogram_is_read_as_quantiles_and_its_5xx_share(prom: Server, now: float) -> None:
    series = {s.name: s for s in connector(prom).metrics("frontend", recent(now))}
    assert {"latency_p99", "latency_p50", "error_ratio", "requests_per_second"} <= set(series)
    p99, errors = series["latency_p99"], series["error_ratio"]
    quiet = p99.timestamps < now - FAULT - 120
    assert np.nanmax(p99.values[quiet]) <= 0.025
    assert np.nanmedian(p99.values[~quiet & (p99.timestamps > now - FAULT + 120)]) > 1.0
    assert np.nanmax(errors.values[quiet]) == 0.0  # no 5xx yet reads as a share of 0, not as missing
    assert np.nanmedian(errors.values[p99.timestamps > now - FAULT + 120]) == pytest.approx(0.2, abs=0.02)
    assert np.nanmedian(series["requests_per_second"].values) == pytest.approx(10.0, rel=0.05)
    # each quantile point carries the width of the bucket it falls in, from the histogram's own bounds
    assert p99.resolution is not None
    assert series["requests_per_second"].resolution is None
    assert np.nanmax(p99.resolution[quiet]) == pytest.approx(0.025 - 0.01)  # the (10, 25] ms bucket
    assert np.nanmedian(p99.resolution[p99.timestamps > now - FAULT + 120]) == pytest.approx(2.5 - 1.0)


def test_http_series_that_name_their_pod_are_read_per_pod(prom: Server, now: float) -> None:
    errors = connector(prom).metrics("payment", recent(now), ["error_ratio"])
    late = {s.instance: float(np.median(s.values[s.timestamps > now - FAULT + 120])) for s in errors}
    assert late == {PAYMENT_PODS[0]: 0.0, PAYMENT_PODS[1]: pytest.approx(0.5, abs=0.02)}


def test_a_summary_is_read_per_pod_at_the_quantiles_it_exports(prom: Server, now: float) -> None:
    series = connector(prom).metrics("inventory", recent(now))
    late = {
        (s.name, s.instance): float(np.median(s.values[s.timestamps > now - FAULT + 120])) for s in series
    }
    first, second = INVENTORY_PODS
    # each pod's own quantiles (they cannot be pooled), none that the timer does not export
    assert late[("latency_p90", first)] == pytest.approx(0.05)
    assert late[("latency_p90", second)] == pytest.approx(0.8)
    assert late[("latency_p99", second)] == pytest.approx(1.6)
    assert not any(name == "latency_p50" for name, _ in late)
    assert late[("requests_per_second", first)] == pytest.approx(4.0, rel=0.05)
    assert late[("error_ratio", second)] == pytest.approx(0.1, abs=0.01)
    assert late[("error_ratio", first)] == 0.0


def test_pods_map_to_their_workload_and_discovery_puts_conventions_first(prom: Server, now: float) -> None:
    prometheus = connector(prom)
    window = recent(now)
    # pod -> ReplicaSet -> Deployment; and the canary Deployment's pod, by its label
    assert prometheus.pods("checkout", window) == [POD, CANARY]
    names = prometheus.metric_names("checkout", window)
    # the calls it serves in the service graph (`server`), then the container series, which reach the
    # workload through its pod; the metric of no convention comes last. No failed share of its calls:
    # the service graph never counted a failed call in this store, so a share of 0 would be a guess.
    assert names == [
        "call_requests_per_second",
        "cpu_usage_cores",
        "memory_working_set_bytes",
        "orders_processed_total",
    ]
    (orders,) = prometheus.metrics("checkout", window, ["orders_processed_total"])
    memory = prometheus.metrics("checkout", window, ["memory_working_set_bytes"])
    # per pod, as cAdvisor reports it (a sum would rise as a rollout adds pods), the canary's too
    assert {(s.instance, float(np.median(s.values))) for s in memory} == {(POD, 2.0e8), (CANARY, 1.0e8)}
    assert np.median(orders.values) == pytest.approx(3.0)  # a counter of no convention: its rate


def test_the_query_budget_bounds_an_investigation(prom: Server, now: float) -> None:
    prometheus = connector(prom, max_queries=7)
    # owner references (2), metric names (1), metadata (1), whether the service graph records failed
    # calls (1) and the scrape interval (2: `up`, which this backfill lacks, then the entity's series)
    prometheus.metric_names("checkout", recent(now))
    assert prometheus.queries == 7
    with pytest.raises(BackendError, match="query budget of 7"):
        prometheus.metrics("checkout", recent(now))


def test_a_range_query_asked_again_is_answered_from_its_first_reply(prom: Server, now: float) -> None:
    prometheus = connector(prom)
    first = prometheus.metrics("checkout", recent(now))
    asked = prometheus.queries
    again = prometheus.metrics("checkout", recent(now))
    assert prometheus.queries == asked
    assert [(s.name, s.values.tolist()) for s in again] == [(s.name, s.values.tolist()) for s in first]
    prometheus.metrics("checkout", recent(now - 60))  # another window is asked anew
    assert prometheus.queries > asked


def test_types_come_from_the_metadata_api(prometheus: StartPrometheus, tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s}\n"
        f"scrape_configs: [{{job_name: self, static_configs: [{{targets: ['127.0.0.1:{port}']}}]}}]\n"
    )
    server = prometheus(config, tmp_path / "tsdb", port=port)
    deadline = time.monotonic() + 30
    while not server.get("/api/v1/metadata")["data"] and time.monotonic() < deadline:
        time.sleep(0.5)
    types = connector(server).metadata()
    assert types["prometheus_http_requests_total"] is MetricType.COUNTER
    assert types["prometheus_http_request_duration_seconds"] is MetricType.HISTOGRAM
    # named like a gauge, typed a summary by its exporter: the metadata wins over the name
    assert type_from_name("go_gc_duration_seconds") is MetricType.GAUGE
    assert metric_type("go_gc_duration_seconds", types) is MetricType.SUMMARY
    assert metric_type("prometheus_http_request_duration_seconds_bucket", types) is MetricType.HISTOGRAM
    assert types["go_goroutines"] is MetricType.GAUGE


def test_topology_comes_from_service_graph_metrics_without_a_traces_backend(prom: Server, now: float) -> None:
    source = LiveSource(LiveConfig.from_mapping({"prometheus": {"url": prom.url}}), now=lambda: now)
    graph = source.topology()
    assert [(e.caller, e.callee) for e in graph.edges] == [("frontend", "checkout")]
    assert graph.origin == "service-graph metrics (prometheus)"
    assert source.backend_states()["prometheus"] == "configured"


def test_span_metrics_give_each_operations_durations_where_they_were_kept(prom: Server, now: float) -> None:
    source = LiveSource(LiveConfig.from_mapping({"prometheus": {"url": prom.url}}), now=lambda: now)
    covered = sorted(
        t for t, service in source.span_coverage(recent(now), COVERAGE_STEP) if service == "ledger"
    )
    gaps = np.diff(covered)
    assert int(np.sum(gaps > COVERAGE_STEP)) == 1  # two stretches: the normal minutes and the fault
    assert covered[0] >= now - NORMAL_SPANS[0]
    assert covered[-1] <= now + 1
    fault = {(o.entity, o.operation): o for o in source.operation_durations(TimeWindow(now - 300, now + 1))}
    assert 0.2 <= fault[SLOW_OPERATION].median <= 0.4  # inside its bucket, (200, 400] ms
    assert 0.01 <= fault[FLAT_OPERATIONS[0]].median <= 0.05
    assert fault[SLOW_OPERATION].spans == pytest.approx(2.0 * 300, rel=0.1)


def test_a_service_whose_operations_did_not_slow_is_disowned_by_its_span_metrics(
    prom: Server, now: float
) -> None:
    """The baseline hour holds no spans: the reference reaches back to the normal minutes before it."""
    source = LiveSource(LiveConfig.from_mapping({"prometheus": {"url": prom.url}}), now=lambda: now)
    onset = now - FAULT
    alert = Alert(name="LatencyP99Anomaly", entity="gateway", fired_at=onset + 120)
    baseline = TimeWindow(onset - 300 - HOUR, onset - 300)
    ctx = ToolContext(source, alert, TimeWindow(onset - 300, now + 1), baseline, source.topology())
    z = duration_z(ctx)
    assert z[SLOW_OPERATION[0]] > KNEE
    assert all(abs(z[service]) < 1.0 for service, _ in FLAT_OPERATIONS)
    assert spans_disown(ctx, "gateway", MetricFamily.LATENCY) == (
        pytest.approx(z["gateway"]),
        "span durations",
    )
    assert spans_disown(ctx, "ledger", MetricFamily.LATENCY) is None  # its operation did slow


@pytest.mark.django_db
def test_with_no_backend_or_none_reachable_nothing_was_examined(now: float) -> None:
    alert = Alert(name="HighErrorRatio", entity="frontend", fired_at=now)
    dead = f"http://127.0.0.1:{free_port()}"
    for settings in ({}, {"prometheus": {"url": dead}, "loki": {"url": dead}}):
        source = LiveSource(
            LiveConfig.from_mapping({**settings, "retry": {"max_attempts": 1}}), now=lambda: now
        )
        result = investigate(source, alert, EngineConfig())
        assert not result.confident
        assert result.guidance is not None
        assert result.guidance.anchor == "nothing_examined"
        states = source.backend_states()
        if settings:
            assert states["prometheus"].startswith("unreachable")
            assert states["loki"].startswith("unreachable") or states["loki"] == "configured"
        else:
            assert set(states.values()) == {"not configured"}


def test_rollouts_come_from_kube_state_metrics_without_a_change_source(prom: Server, now: float) -> None:
    """Without the Kubernetes API or GitHub, a ReplicaSet created inside the window is a rollout of the
    service its labels (its pod template's `app` label) name, named by the ReplicaSet its pods' names
    carry; also when none of its pods has telemetry yet."""
    source = LiveSource(LiveConfig.from_mapping({"prometheus": {"url": prom.url}}), now=lambda: now)
    assert Modality.CHANGES in source.modalities()
    canary, event = source.events(TimeWindow(now - 2 * FAULT, now + 1))
    assert (event.entity, event.kind, event.reference) == ("checkout", EventKind.DEPLOY, REPLICASET)
    assert (canary.entity, canary.reference) == ("cart", "cart-canary-6b7c8d9f5")  # not `cart-canary`
    assert event.time == pytest.approx(now - FAULT, abs=STEP)
    assert source.events(TimeWindow(now - 2 * FAULT, now + 1), "frontend") == []
    assert source.events(TimeWindow(now - 2 * HOUR, now - 2 * FAULT)) == []  # created later
    # With the Kubernetes API configured, it is the change source, not Prometheus.
    k8s = {
        "prometheus": {"url": prom.url},
        "kubernetes": {"url": f"http://127.0.0.1:{free_port()}", "namespaces": [NAMESPACE]},
    }
    assert Modality.CHANGES not in LiveSource(LiveConfig.from_mapping(k8s), now=lambda: now).modalities()
