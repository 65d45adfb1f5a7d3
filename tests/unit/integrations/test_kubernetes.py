"""Kubernetes events connector against recorded core/v1 and events.k8s.io/v1 EventLists."""

from __future__ import annotations

import httpx
import pytest
import respx

from rca.integrations.http import BackendError
from rca.integrations.kubernetes.connector import CORE_API, KubernetesConnector
from rca.integrations.kubernetes.topology import Service, Workload, service_edges
from rca.telemetry.model import EventKind

from .recorded import WINDOW, exchange, reply

URL = "https://kubernetes.default.svc"


def test_core_v1_events(make_client) -> None:
    k8s = KubernetesConnector(make_client("kubernetes", URL), namespaces=["shop"], api=CORE_API)
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/namespaces/shop/events").mock(
            return_value=reply("kubernetes", "core_events")
        )
        events = k8s.events(WINDOW)
    request = route.calls.last.request
    assert request.headers["authorization"] == "Bearer s3cret-token-value"
    assert request.url.params["limit"] == "500"

    got = [(e.entity, e.kind, e.attributes["k8s.event.reason"]) for e in events]
    assert got == [
        ("cartservice", EventKind.POD_RESTART, "BackOff"),  # began 09:58, still repeating in the window
        ("redis-cart", EventKind.K8S_WARNING, "Unhealthy"),  # statefulset pod redis-cart-0
        ("cartservice", EventKind.POD_RESTART, "Killing"),
        ("frontend", EventKind.DEPLOY, "ScalingReplicaSet"),  # two replica sets: a rollout
        ("frontend", EventKind.DEPLOY, "ScalingReplicaSet"),
        ("emailservice", EventKind.K8S_WARNING, "FailedScheduling"),  # only eventTime / creationTimestamp
    ]  # the 09:30 Pulled event is outside the window
    backoff = events[0]
    assert backoff.time == WINDOW.start
    assert backoff.attributes["first_seen"] == "1714557480.000"
    assert backoff.attributes["k8s.event.count"] == "7"
    assert backoff.instance == "cartservice-7d4b9c8f6d-x2k4j"
    assert backoff.message.startswith("BackOff: Back-off restarting failed container")
    assert events[5].time == pytest.approx(1714557780.0)
    assert events[3].instance is None
    assert events[3].attributes["k8s.object.kind"] == "Deployment"


def test_events_k8s_io_v1_events(make_client) -> None:
    k8s = KubernetesConnector(make_client("kubernetes", URL), namespaces=["shop"])
    with respx.mock(base_url=URL) as mock:
        mock.get("/apis/events.k8s.io/v1/namespaces/shop/events").mock(
            return_value=reply("kubernetes", "events_v1")
        )
        events = k8s.events(WINDOW)
    got = [(e.entity, e.kind) for e in events]
    assert got == [
        ("gke-node-1", EventKind.K8S_WARNING),  # OOMKilling about the node
        ("recommendationservice", EventKind.SCALE),  # one replica set resized: not a rollout
        ("paymentservice", EventKind.POD_RESTART),
        ("fluent-bit", EventKind.K8S_NORMAL),  # daemonset pod fluent-bit-x7k2p
    ]
    payment = events[2]
    assert payment.attributes["k8s.event.count"] == "12"
    assert payment.attributes["last_seen"] == "1714557960.000"  # series.lastObservedTime
    assert events[0].attributes["reporter"] == "kernel-monitor"


def test_entity_filter_and_continue_paging(make_client) -> None:
    k8s = KubernetesConnector(make_client("kubernetes", URL), namespaces=["shop"], api=CORE_API, page_size=2)
    with respx.mock(base_url=URL) as mock:
        second = mock.get(
            "/api/v1/namespaces/shop/events",
            params__contains={
                "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzOTk5LCJzdGFydCI6ImNhcnQifQ"
            },
        ).mock(return_value=reply("kubernetes", "core_events_page2"))
        mock.get("/api/v1/namespaces/shop/events").mock(return_value=reply("kubernetes", "core_events_page1"))
        events = k8s.events(WINDOW, entity="frontend")
    assert second.call_count == 1
    assert [e.kind for e in events] == [EventKind.DEPLOY, EventKind.DEPLOY]  # rollout seen across pages


def test_forbidden_is_not_retried_and_names_the_backend(make_client, sleeps) -> None:
    k8s = KubernetesConnector(make_client("kubernetes", URL), namespaces=["shop"])
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/apis/events.k8s.io/v1/namespaces/shop/events").mock(
            return_value=reply("kubernetes", "forbidden")
        )
        with pytest.raises(BackendError) as err:
            k8s.events(WINDOW)
    assert err.value.backend == "kubernetes"
    assert "HTTP 403" in err.value.reason
    assert "cannot list resource" in err.value.reason
    assert route.call_count == 1
    assert sleeps == []


def test_configuration_is_checked(make_client) -> None:
    client = make_client("kubernetes", URL)
    with pytest.raises(ValueError, match="namespace"):
        KubernetesConnector(client, namespaces=[])
    with pytest.raises(ValueError, match="events API"):
        KubernetesConnector(client, namespaces=["shop"], api="v2")


def _workloads(mock: respx.MockRouter) -> None:
    for kind in ("services", "deployments", "statefulsets", "daemonsets"):
        mock.get(exchange("kubernetes", kind)["request"]["path"]).mock(return_value=reply("kubernetes", kind))


def test_call_graph_from_services_selectors(make_client) -> None:
    k8s = KubernetesConnector(make_client("kubernetes", URL), namespaces=["shop"])
    with respx.mock(base_url=URL) as mock:
        _workloads(mock)
        edges = k8s.service_edges()
        assert len(mock.calls) == 4  # services and the three workload kinds of the namespace
    assert edges == [
        ("cartservice", "redis-cart", 1.0),  # REDIS_ADDR=redis-cart:6379; a StatefulSet behind the Service
        ("frontend", "cartservice", 1.0),  # CART_SERVICE_ADDR=cartservice:7070 (not cartservice-canary)
        ("frontend", "productcatalogservice", 1.0),  # by its fully qualified name
        ("loadgenerator", "frontend", 1.0),  # --host=http://frontend.shop:80, an argument
    ]  # frontend-external and the selector-less payments-legacy are named by no one


def test_a_bare_service_name_reaches_only_its_own_namespace() -> None:
    cart = Service("shop", "cartservice", {"app": "cartservice"})
    server = Workload("shop", "cartservice", {"app": "cartservice", "tier": "backend"}, ())
    near = Workload("shop", "frontend", {"app": "frontend"}, ("cartservice:7070",))
    far = Workload("ops", "prober", {"app": "prober"}, ("cartservice:7070", "x.cartservice.shop.svc"))
    qualified = Workload("ops", "auditor", {"app": "auditor"}, ("grpc://cartservice.shop.svc.cluster.local",))
    assert service_edges([cart], [server, near, far, qualified]) == [
        ("auditor", "cartservice", 1.0),
        ("frontend", "cartservice", 1.0),
    ]
    wrong = Service("shop", "cartservice", {"app": "cartservice", "tier": "frontend"})
    assert service_edges([wrong], [server, near]) == []  # the selector must hold whole


def test_workload_lists_are_paged_and_a_bad_item_names_its_list(make_client) -> None:
    k8s = KubernetesConnector(make_client("kubernetes", URL), namespaces=["shop"], page_size=1)
    listing = exchange("kubernetes", "deployments")["response"]["json"]
    first = {**listing, "metadata": {"continue": "next"}, "items": listing["items"][:1]}
    broken = {**listing, "items": [{"metadata": {"namespace": "shop"}}]}
    with respx.mock(base_url=URL) as mock:  # the first route that matches answers
        mock.get("/api/v1/namespaces/shop/services").mock(return_value=reply("kubernetes", "services"))
        path = exchange("kubernetes", "deployments")["request"]["path"]
        later = mock.get(path, params__contains={"continue": "next"})
        later.mock(return_value=httpx.Response(200, json=broken))
        mock.get(path).mock(return_value=httpx.Response(200, json=first))
        with pytest.raises(BackendError, match=r"deployments of namespace shop.*metadata\.name"):
            k8s.service_edges()
        assert later.call_count == 1
