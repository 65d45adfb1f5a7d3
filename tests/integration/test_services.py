"""The real services behind Rootline answer through the code the app uses."""

from __future__ import annotations

import uuid

import psutil
import pytest
from qdrant_client import models

from celery_app.app import app as celery_app
from celery_app.tasks import ping
from graphstore.driver import database, get_driver
from rca.memory.store import get_client

pytestmark = pytest.mark.integration


def test_graph_write_and_read_back(graph_server: object) -> None:
    run = uuid.uuid4().hex
    get_driver().execute_query(
        "MERGE (a:Service {name: $a, run: $run}) MERGE (b:Service {name: $b, run: $run}) "
        "MERGE (a)-[r:CALLS]->(b) SET r.weight = $w",
        a="frontend",
        b="checkout",
        w=12.5,
        run=run,
        database_=database(),
    )
    records, _, _ = get_driver().execute_query(
        "MATCH (a:Service {run: $run})-[r:CALLS]->(b:Service {run: $run}) "
        "RETURN a.name AS caller, b.name AS callee, r.weight AS weight",
        run=run,
        database_=database(),
    )
    assert [(r["caller"], r["callee"], r["weight"]) for r in records] == [("frontend", "checkout", 12.5)]


def test_celery_round_trip_through_redis() -> None:
    from celery.contrib.testing.worker import start_worker

    assert celery_app.conf.broker_url.startswith("redis://")
    with start_worker(celery_app, pool="threads", concurrency=1, perform_ping_check=False):
        result = ping.delay("hello")
        assert result.get(timeout=20) == {"reply": "hello"}


def test_qdrant_local_upsert_and_query() -> None:
    client = get_client()
    name = f"t_{uuid.uuid4().hex[:8]}"
    client.create_collection(
        name, vectors_config=models.VectorParams(size=4, distance=models.Distance.COSINE)
    )
    client.upsert(
        name,
        points=[
            models.PointStruct(id=1, vector=[1.0, 0.0, 0.0, 0.0], payload={"service": "checkout"}),
            models.PointStruct(id=2, vector=[0.0, 1.0, 0.0, 0.0], payload={"service": "cart"}),
        ],
    )
    hits = client.query_points(name, query=[0.9, 0.1, 0.0, 0.0], limit=1).points
    assert hits[0].id == 1
    assert hits[0].payload == {"service": "checkout"}
    client.delete_collection(name)


def test_graph_server_listens_on_loopback_only(graph_server) -> None:  # type: ignore[no-untyped-def]
    listening = [
        c.laddr
        for c in psutil.Process(graph_server.pid()).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert listening, "the graph server listens on nothing"
    assert {addr.ip for addr in listening} <= {"127.0.0.1", "::ffff:127.0.0.1"}
