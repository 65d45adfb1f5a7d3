"""/healthz reports each dependency, and answers 503 naming the one that is down."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

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
