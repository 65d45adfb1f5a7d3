"""Recorded series under the cluster conventions: cAdvisor, kube-state-metrics, OTel HTTP, service graph."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rca.telemetry.model import Event, EventKind, MetricSeries, split_edge_name
from rca.telemetry.replay.conventions import (
    NOMINAL_MEMORY_BYTES,
    ClusterWriter,
    Placed,
    Pod,
    combine,
    rollout_replicasets,
    write_rollouts,
    write_scrape_health,
)
from rca.telemetry.replay.openmetrics import Exposition
from tests.unit.replay.omtext import Sample, select, values, written

STEP = 60.0
TIMES = np.array([0.0, 60.0, 120.0])


def placed(entity: str, name: str, unit: str, vals: list[float], instance: str | None = None) -> Placed:
    return Placed(entity, name, unit, instance, TIMES[: len(vals)].copy(), np.array(vals, dtype=np.float64))


def cluster(*series: Placed) -> tuple[ClusterWriter, list[Sample]]:
    writer = ClusterWriter(Exposition(), "shop", STEP)
    writer.write(list(series))
    return writer, written(writer.expo)


POD = "cart-7d9f8b6c5d-x2k4q"


def test_cpu_millicores_integrate_into_the_cadvisor_counter_and_give_the_limit() -> None:
    _, out = cluster(
        placed("cart", "cpu_millicores", "m", [500.0, 1000.0, 250.0], POD),
        placed("cart", "cpu", "%", [25.0, 50.0, 12.5], POD),
    )
    labels = {"namespace": "shop", "pod": POD, "container": "cart", "job": "kubelet"}
    # each scrape interval adds cores * seconds
    assert values(out, "container_cpu_usage_seconds_total", **labels) == [30.0, 90.0, 105.0]
    # 0.5 cores at 25 % of the limit: a 2-core limit
    assert set(values(out, "kube_pod_container_resource_limits", pod=POD, resource="cpu", unit="core")) == {
        2.0
    }


def test_a_percentage_alone_is_written_against_a_nominal_limit() -> None:
    _, out = cluster(
        placed("cart", "cpu", "%", [50.0, 100.0]),
        placed("cart", "memory_utilization", "%", [10.0, 20.0]),
    )
    assert values(out, "container_cpu_usage_seconds_total", container="cart") == [30.0, 90.0]
    assert set(values(out, "kube_pod_container_resource_limits", resource="cpu")) == {1.0}
    assert values(out, "container_memory_working_set_bytes", container="cart") == [
        0.1 * NOMINAL_MEMORY_BYTES,
        0.2 * NOMINAL_MEMORY_BYTES,
    ]
    assert set(values(out, "kube_pod_container_resource_limits", resource="memory")) == {NOMINAL_MEMORY_BYTES}


def test_memory_and_network() -> None:
    _, out = cluster(
        placed("cart", "memory", "bytes", [100.0, 200.0], POD),
        placed("cart", "memory_utilization", "%", [10.0, 20.0], POD),
        placed("cart", "network_rx_bytes", "bytes/s", [1.0, 2.0], POD),
        placed("cart", "network_tx_bytes", "bytes/s", [3.0, 4.0], POD),
    )
    assert values(out, "container_memory_working_set_bytes", pod=POD) == [100.0, 200.0]
    assert set(values(out, "kube_pod_container_resource_limits", resource="memory", unit="byte")) == {1000.0}
    assert values(out, "container_network_receive_bytes_total", pod=POD, interface="eth0") == [60.0, 180.0]
    assert values(out, "container_network_transmit_bytes_total", pod=POD) == [180.0, 420.0]
    assert "container" not in select(out, "container_network_receive_bytes_total")[0].labels  # pod-level


def test_pods_map_to_their_replicaset_and_deployment() -> None:
    _, out = cluster(placed("cart", "memory", "bytes", [1.0, 2.0], POD))
    (owner,) = {tuple(sorted(s.labels.items())) for s in select(out, "kube_pod_owner")}
    assert dict(owner) | {} == {
        "job": "kube-state-metrics",
        "namespace": "shop",
        "pod": POD,
        "owner_kind": "ReplicaSet",
        "owner_name": "cart-7d9f8b6c5d",
        "owner_is_controller": "true",
    }
    (rs,) = {tuple(sorted(s.labels.items())) for s in select(out, "kube_replicaset_owner")}
    assert dict(rs)["replicaset"] == "cart-7d9f8b6c5d"
    assert dict(rs)["owner_kind"] == "Deployment"
    assert dict(rs)["owner_name"] == "cart"
    assert values(out, "kube_pod_labels", pod=POD, label_app="cart") == [1.0, 1.0]
    assert values(out, "kube_replicaset_labels", replicaset="cart-7d9f8b6c5d", label_app="cart") == [1.0, 1.0]
    assert values(out, "kube_pod_container_status_restarts_total", pod=POD, container="cart") == [0.0, 0.0]


def test_an_unnamed_pod_gets_a_deterministic_deployment_style_name() -> None:
    pod = Pod.of("shop", "front-end", None)
    assert re.fullmatch(
        r"front-end-[bcdfghjklmnpqrstvwxz2456789]{10}-[bcdfghjklmnpqrstvwxz2456789]{5}", pod.name
    )
    assert pod == Pod.of("shop", "front-end", None)
    assert pod != Pod.of("other", "front-end", None)
    assert (pod.replicaset, pod.deployment) == (pod.name.rsplit("-", 1)[0], "front-end")
    assert Pod.of("shop", "x", "standalone") == Pod("standalone", None, None)


def test_service_level_requests_become_an_http_server_histogram_with_status_codes() -> None:
    _, out = cluster(
        placed("front", "latency_p50", "s", [0.02, 0.02]),
        placed("front", "latency_p99", "s", [0.2, 0.2]),
        placed("front", "success_rate", "%", [100.0, 90.0]),
        # the front's own pod: its rate stands in for the service's; its latency is not written twice
        placed("front", "requests", "req/s", [2.0, 2.0], "front-5f6585d649-fnmft"),
        placed("front", "latency_p99", "s", [9.0, 9.0], "front-5f6585d649-fnmft"),
    )
    ok = values(
        out,
        "http_server_request_duration_seconds_count",
        service_name="front",
        http_response_status_code="200",
    )
    err = values(
        out,
        "http_server_request_duration_seconds_count",
        service_name="front",
        http_response_status_code="500",
    )
    assert ok == [120.0, 228.0]  # 2 req/s * 60 s, then 90 % of it
    assert err == [0.0, 12.0]
    assert all(
        "k8s_pod_name" not in s.labels for s in select(out, "http_server_request_duration_seconds_count")
    )
    # half the requests are under the p50, 99 % under the p99; nothing near the pod's 9 s
    first = {
        s.labels["le"]: s.value
        for s in select(out, "http_server_request_duration_seconds_bucket")
        if s.time == 0.0 and s.labels["http_response_status_code"] == "200"
    }
    assert first["0.025"] >= 60.0
    assert first["0.25"] >= 119.0
    assert first["5.0"] == first["+Inf"] == 120.0


def test_without_a_volume_requests_are_counted_at_the_nominal_rate() -> None:
    writer, out = cluster(placed("api", "latency_p90", "s", [0.1, 0.1], "api-5f6585d649-fnmft"))
    counts = values(
        out, "http_server_request_duration_seconds_count", service_name="api", http_response_status_code="200"
    )
    assert counts == [60.0, 120.0]
    (sample,) = select(out, "http_server_request_duration_seconds_count")[:1]
    assert sample.labels["k8s_pod_name"] == sample.labels["instance"] == "api-5f6585d649-fnmft"
    assert writer.written["latency_p90"] == {"http_server_request_duration_seconds"}


def test_service_level_edges_become_the_service_graph() -> None:
    writer, out = cluster(
        placed("cart", "latency_p50{caller=front,callee=cart}", "s", [0.01, 0.01]),
        placed("front", "client_latency_p50{caller=front,callee=cart}", "s", [0.02, 0.02]),
        placed("cart", "success_rate{caller=front,callee=cart}", "%", [100.0, 50.0]),
    )
    edge = {"client": "front", "server": "cart"}
    assert values(out, "traces_service_graph_request_total", **edge) == [60.0, 120.0]
    assert values(out, "traces_service_graph_request_failed_total", **edge) == [0.0, 30.0]
    assert values(out, "traces_service_graph_request_server_seconds_count", **edge) == [60.0, 120.0]
    assert values(out, "traces_service_graph_request_client_seconds_count", **edge) == [60.0, 120.0]
    assert writer.written["client_latency_p50"] == {"traces_service_graph_request_client_seconds"}
    assert writer.written["success_rate"] == {"traces_service_graph_request_failed_total"}


def test_pod_level_edges_become_http_server_and_client_metrics() -> None:
    server_pod, client_pod = "cart-v1-685f9dd56f-b9ffz", "front-v1-6b8f9c7d5b-q2w3e"
    _, out = cluster(
        placed("cart", "success_rate{caller=front,callee=cart}", "%", [100.0, 100.0], server_pod),
        placed("cart", "latency{caller=front,callee=cart}", "s", [0.01, 0.01], server_pod),
        placed("cart", "success_rate{caller=checkout,callee=cart}", "%", [100.0, 50.0], server_pod),
        placed("cart", "latency{caller=checkout,callee=cart}", "s", [0.02, 0.02], server_pod),
        placed("front", "success_rate{caller=front,callee=cart}", "%", [100.0, 100.0], client_pod),
        placed("front", "latency{caller=front,callee=cart}", "s", [0.03, 0.03], client_pod),
    )
    # the server pod's two callers add up in one series (server metrics do not name the caller)
    assert values(
        out,
        "http_server_request_duration_seconds_count",
        k8s_pod_name=server_pod,
        http_response_status_code="200",
    ) == [120.0, 210.0]
    assert values(
        out,
        "http_server_request_duration_seconds_sum",
        k8s_pod_name=server_pod,
        http_response_status_code="200",
    ) == pytest.approx([1.8, 3.0])
    client = select(out, "http_client_request_duration_seconds_count", k8s_pod_name=client_pod)
    assert {s.labels["server_address"] for s in client} == {"cart"}
    assert {s.labels["service_name"] for s in client} == {"front"}


def test_names_without_a_convention_are_reported_not_written() -> None:
    writer, out = cluster(
        placed("cart", "syscall_read", "count", [1.0, 2.0], POD),
        placed("cart", "node_cpu", "%", [1.0, 2.0], POD),
        placed("cart", "mystery", "x", [1.0, 2.0], POD),
    )
    assert set(writer.skipped) == {"syscall_read", "node_cpu", "mystery"}
    assert "system calls" in writer.skipped["syscall_read"]
    assert "node" in writer.skipped["node_cpu"]
    assert writer.skipped["mystery"] == "no convention for this name"
    assert not [s for s in out if "syscall" in s.name or "node" in s.name]


def test_recordings_of_one_series_are_joined_on_the_scrape_grid() -> None:
    early = MetricSeries("cart", "memory", "bytes", np.array([0.0, 1.0]), np.array([1.0, 2.0]), POD)
    late = MetricSeries("cart", "memory", "bytes", np.array([100.0, 101.0]), np.array([3.0, 4.0]), POD)
    (joined,) = combine([(late, 0.0), (early, 50.0)], lambda t: np.ceil(t))
    assert joined.times.tolist() == [50.0, 51.0, 100.0, 101.0]
    assert joined.values.tolist() == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("cpu", ("cpu", None, None)),
        ("success_rate{caller=a-b,callee=c}", ("success_rate", "a-b", "c")),
        ("latency_p50{caller=x}", ("latency_p50{caller=x}", None, None)),
    ],
)
def test_split_name(name: str, parts: tuple[str, str | None, str | None]) -> None:
    assert split_edge_name(name) == parts


def test_a_rollout_is_the_replicaset_its_pods_belong_to_created_when_it_began() -> None:
    """The change history as kube-state-metrics holds it: each rollout a new ReplicaSet, its creation
    time the rollout's start (moved by the replay's shift), written from then on; config changes and
    rollouts that name neither pods nor a version have no ReplicaSet."""
    events = [
        Event(100.0, "cart", EventKind.DEPLOY, "start", reference="v2-5d8f7c9b4"),
        Event(
            160.0,
            "cart",
            EventKind.DEPLOY,
            "step",
            reference="v2-5d8f7c9b4",
            instance="cart-v2-5d8f7c9b4-x2k7q",
        ),
        Event(200.0, "email", EventKind.DEPLOY, "start", reference="7f9c6d8b5"),
        Event(140.0, "email", EventKind.CONFIG_CHANGE, "flag", reference="flags-2"),
        Event(150.0, "ads", EventKind.DEPLOY, "start"),
    ]
    assert rollout_replicasets("shop", events) == {
        "cart-v2-5d8f7c9b4": ("cart", 100.0),
        "email-7f9c6d8b5": ("email", 200.0),
    }
    expo = Exposition()
    grid = np.arange(0.0, 1200.0, 60.0)  # the replayed present is 1140
    assert (
        write_rollouts(expo, "shop", events, 1000.0, lambda t: grid[grid >= t]) == 1
    )  # email's is after now
    samples = written(expo)
    created = select(samples, "kube_replicaset_created", namespace="shop", replicaset="cart-v2-5d8f7c9b4")
    assert [(s.time, s.value) for s in created] == [(1140.0, 1100.0)]
    # its service, by the label its pod template gives it, although no pod of it has telemetry
    labelled = select(samples, "kube_replicaset_labels", replicaset="cart-v2-5d8f7c9b4", label_app="cart")
    assert [s.time for s in labelled] == [1140.0]
    assert len(samples) == len(created) + len(labelled)  # email's rollout began after the replayed present


def test_every_scrape_job_gets_prometheus_s_up_until_the_replayed_present() -> None:
    """Prometheus writes `up` for each target at every scrape, also when the scrape found nothing: 1 where
    the job's series have a sample, 0 in its gaps, from its first sample to the present (where a live
    investigation reads that the data ends)."""
    writer, _ = cluster(
        placed("cart", "cpu_millicores", "m", [100.0, 200.0, 300.0], instance=POD),
        placed("ads", "cpu_millicores", "m", [100.0], instance="ads-6c8d9f7b5-k2m4p"),
    )
    grid = np.arange(0.0, 360.0, 60.0)  # the replayed present is 300
    # cAdvisor's (the kubelet's) and kube-state-metrics' (the pods' owners)
    assert write_scrape_health(writer.expo, lambda t: grid[grid >= t]) == 2
    up = select(written(writer.expo), "up", job="kubelet")
    assert [(s.time, s.value) for s in up] == [
        (0.0, 1.0),
        (60.0, 1.0),
        (120.0, 1.0),
        (180.0, 0.0),
        (240.0, 0.0),
        (300.0, 0.0),
    ]
