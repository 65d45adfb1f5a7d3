"""/healthz reports each dependency and supervised process, answers 503 naming the one that is down,
and never hangs on one."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from graphstore.driver import close_driver
from rca import health, heartbeats
from tests.conftest import point_graph_at, start_arcade

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_healthz_ok_then_503_when_graph_stops(tmp_path: Path, graph_server) -> None:  # type: ignore[no-untyped-def]
    own = start_arcade(tmp_path / "arcade")  # a server of its own, so stopping it spares the others
    try:
        point_graph_at(own)
        response = Client().get("/healthz")
        body = response.json()
        assert response.status_code == 200, body
        assert body["status"] == "ok"
        assert set(body["checks"]) == {"database", "broker", "graph", "vector_store"}
        assert all(c["status"] == "ok" for c in body["checks"].values())

        own.stop()
        response = Client().get("/healthz")
        body = response.json()
        assert response.status_code == 503
        assert body["checks"]["graph"]["status"] == "down"
        assert body["checks"]["graph"]["detail"]  # the reason
        assert body["checks"]["database"]["status"] == "ok"
    finally:
        own.stop()
        point_graph_at(graph_server)


def test_healthz_names_a_broker_that_is_down(settings, graph_server) -> None:  # type: ignore[no-untyped-def]
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["broker"]["status"] == "down"
    assert "ConnectionError" in response.json()["checks"]["broker"]["detail"]


# --- issue #23: deadlines, one round per burst, supervised processes ----------------------------------


@pytest.fixture
def hung_graph(graph_server) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """The graph's address answers TCP but never speaks Bolt (a stopped JVM's port, a hung server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)  # connections complete in the backlog and are never read
    settings.ROOTLINE_GRAPH = replace(
        settings.ROOTLINE_GRAPH, uri=f"bolt://127.0.0.1:{listener.getsockname()[1]}"
    )
    close_driver()
    yield
    point_graph_at(graph_server)
    listener.close()


def _reliability(**changes: object) -> None:
    settings.ROOTLINE_RELIABILITY = replace(settings.ROOTLINE_RELIABILITY, **changes)


@pytest.fixture
def restore_reliability() -> Iterator[None]:
    saved = settings.ROOTLINE_RELIABILITY
    yield
    settings.ROOTLINE_RELIABILITY = saved


def test_a_hung_dependency_costs_a_probe_at_most_the_deadline(
    hung_graph: None, restore_reliability: None
) -> None:
    _reliability(health_timeout_s=1.0)
    for path in ("/healthz", "/api/v1/health/"):
        started = time.monotonic()
        response = Client().get(path)
        took = time.monotonic() - started
        assert response.status_code == 503
        assert response.json()["checks"]["graph"] == {"status": "down", "detail": "no answer within 1 s"}
        assert response.json()["checks"]["database"]["status"] == "ok"  # checked concurrently, not skipped
        assert took < 3.0, took


def test_a_burst_of_probes_costs_one_round(
    hung_graph: None, restore_reliability: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _reliability(health_timeout_s=1.0, health_cache_s=1.0)
    monkeypatch.setattr(health, "_last", None)  # no round left over from an earlier test
    calls = []
    original = health.CHECKS["database"]
    health.CHECKS["database"] = lambda: calls.append(1) or original()  # type: ignore[func-returns-value]
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(lambda _: Client().get("/healthz").status_code, range(16)))
        took = time.monotonic() - started
    finally:
        health.CHECKS["database"] = original
    assert codes == [503] * 16
    assert len(calls) == 1  # every probe shared the one round
    assert took < 3.0, took


def test_healthz_names_a_missing_worker_or_scheduler(graph_server, restore_reliability: None) -> None:  # type: ignore[no-untyped-def]
    _reliability(health_processes=("worker", "scheduler"), heartbeat_stale_s=2.0)
    conn = heartbeats.client(1.0)
    for key in conn.scan_iter(match=f"{heartbeats.PREFIX}:*"):
        conn.delete(key)
    worker = heartbeats.start(("worker",), name="w1@test")
    scheduler = heartbeats.start(("scheduler",), name="beat@test")
    try:
        wait_until(lambda: Client().get("/healthz").status_code == 200, 5)
        body = Client().get("/healthz").json()
        assert body["checks"]["worker"]["status"] == "ok"
        assert "w1@test" in body["checks"]["worker"]["detail"]
        assert "beat@test" in body["checks"]["scheduler"]["detail"]

        scheduler.stop()  # its key expires after the stale period
        wait_until(lambda: Client().get("/healthz").status_code == 503, 5)
        body = Client().get("/healthz").json()
        assert body["checks"]["scheduler"]["status"] == "down"
        assert "no scheduler has sent a heartbeat in the last 2 s" in body["checks"]["scheduler"]["detail"]
        assert body["checks"]["worker"]["status"] == "ok"
    finally:
        worker.stop()
        scheduler.stop()


def wait_until(condition, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


# --- a worker alive but deaf to its queues --------------------------------------------------------------


@pytest.fixture
def queue() -> Iterator[tuple[str, object]]:
    """A Redis list of its own on the test broker, as a queue the watched worker would take from."""
    conn = heartbeats.client(1.0)
    name = f"rootline-test-watch-{time.monotonic_ns()}"
    yield name, conn
    conn.delete(name)


def test_a_consumer_is_deaf_only_after_messages_waited_a_window_with_a_slot_free(queue) -> None:  # type: ignore[no-untyped-def]
    name, conn = queue
    busy = [0]
    watch = heartbeats.ConsumerWatch(
        (name,), slots=2, busy=lambda: busy[0], window_s=10.0, paused_s=50.0, last_received=0.0
    )
    assert not watch.deaf(conn, now=100.0)  # nothing waiting
    conn.rpush(name, "message")
    assert not watch.deaf(conn, now=101.0)  # waiting from now on
    assert not watch.deaf(conn, now=110.0)
    assert watch.deaf(conn, now=111.0)  # a window of waiting with a slot free

    watch.last_received = 112.0  # it took a message: the wait counts from there
    assert not watch.deaf(conn, now=121.0)
    assert watch.deaf(conn, now=122.0)

    busy[0] = 2  # every slot taken: waiting messages are the worker being busy, not deaf
    assert not watch.deaf(conn, now=200.0)
    busy[0] = 1
    assert not watch.deaf(conn, now=201.0)  # the wait starts over
    assert watch.deaf(conn, now=211.0)

    conn.delete(name)
    assert not watch.deaf(conn, now=300.0)  # drained: the wait starts over
    conn.rpush(name, "message")
    assert not watch.deaf(conn, now=305.0)

    unreachable = heartbeats.redis.Redis(port=1, socket_connect_timeout=0.5)
    assert not watch.deaf(unreachable, now=400.0)  # a broker that cannot be read proves nothing
    assert not watch.deaf(conn, now=401.0)
    assert watch.deaf(conn, now=411.0)

    # A wait the process itself slept through (stopped, starved) is no proof: it starts over.
    assert not watch.deaf(conn, now=470.0)
    assert not watch.deaf(conn, now=479.0)
    assert watch.deaf(conn, now=480.0)


def test_a_deaf_worker_stops_beating_and_ends_itself(queue, restore_reliability: None) -> None:  # type: ignore[no-untyped-def]
    _reliability(heartbeat_stale_s=0.4)
    name, conn = queue
    conn.rpush(name, "message")
    ended: list[float] = []
    watch = heartbeats.ConsumerWatch((name,), slots=1, busy=lambda: 0, window_s=1.0, paused_s=5.0)
    beating = heartbeats.Heartbeat("deaf@test", ("worker",), watch, on_deaf=ended.append)
    beating.start()
    beating.join(timeout=10)
    assert not beating.is_alive()
    assert ended == [1.0]  # asked to end the process, with the window as its grace
    wait_until(lambda: not any(h["name"] == "deaf@test" for h in heartbeats.live(conn, "worker")), 5)
