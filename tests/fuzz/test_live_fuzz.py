"""Live connectors reading hostile backend responses: every answer is a result or a BackendError.

Each backend's recorded responses (tests/unit/integrations/fixtures) are mutated (subtrees replaced by
arbitrary JSON, fields dropped or added, lists cut) and served to the real connector over respx. A
connector may return fewer records or raise `BackendError` naming the backend; any other exception
would escape to the investigation as a crash.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx
from hypothesis import given
from hypothesis import strategies as st

from rca.integrations.github.changes import GitHubConnector
from rca.integrations.http import BackendError, HttpClient, RetryPolicy
from rca.integrations.jaeger.connector import JaegerConnector
from rca.integrations.kubernetes.connector import KubernetesConnector
from rca.integrations.loki.connector import LokiConnector
from rca.integrations.prometheus.connector import PrometheusConnector
from rca.integrations.tempo.connector import TempoConnector
from tests.fuzz.conftest import FUZZ, JSON, mutate
from tests.unit.integrations.recorded import WINDOW, _load

URL = "http://backend:1234"
ENTITY = "cartservice"
JSON_TYPE = {"Content-Type": "application/json"}

CALLS: dict[str, Callable[[HttpClient], list[Any]]] = {
    "prometheus": lambda c: PrometheusConnector(c).metrics(ENTITY, WINDOW),
    "loki": lambda c: LokiConnector(c, max_pages=3).logs(ENTITY, WINDOW),
    "tempo": lambda c: TempoConnector(c, max_traces=3).spans(WINDOW, ENTITY),
    "jaeger": lambda c: JaegerConnector(c, max_traces=3, max_services=3).spans(WINDOW, None),
    "kubernetes": lambda c: KubernetesConnector(c, namespaces=["shop"]).events(WINDOW),
    "github": lambda c: GitHubConnector(c, repo="acme/shop").events(WINDOW),
}


def recorded_bodies(backend: str) -> dict[str, list[Any]]:
    """The recorded 200 bodies of `backend` by request path (trace lookups share one prefix)."""
    by_path: dict[str, list[Any]] = {}
    for exchange in _load(backend).values():
        response = exchange["response"]
        if response["status"] != 200 or "json" not in response:
            continue
        path = exchange["request"]["path"]
        if path.startswith("/api/traces/"):
            path = "/api/traces/"
        by_path.setdefault(path, []).append(response["json"])
    return by_path


def serve(bodies: dict[str, Any]) -> Callable[[httpx.Request], httpx.Response]:
    """A respx side effect answering each path with its drawn body (the longest matching prefix)."""
    paths = sorted(bodies, key=len, reverse=True)

    def answer(request: httpx.Request) -> httpx.Response:
        path = next((p for p in paths if request.url.path.startswith(p)), None)
        if path is None:
            return httpx.Response(404, json={"error": "not recorded"})
        # json.dumps escapes lone surrogates as a real backend's encoder would (\ud800).
        return httpx.Response(200, content=json.dumps(bodies[path]).encode(), headers=JSON_TYPE)

    return answer


@pytest.mark.parametrize("backend", sorted(CALLS))
@FUZZ
@given(data=st.data())
def test_connectors_survive_mutated_responses(backend: str, data: st.DataObject) -> None:
    bodies = {
        path: (
            data.draw(JSON)
            if data.draw(st.integers(0, 9)) == 0
            else mutate(data, data.draw(st.sampled_from(recorded)))
        )
        for path, recorded in recorded_bodies(backend).items()
    }
    client = HttpClient(
        backend, URL, retry=RetryPolicy(max_attempts=1), sleep=lambda _: None, rng=lambda: 1.0
    )
    with client, respx.mock(base_url=URL, assert_all_called=False) as mock:
        mock.route().mock(side_effect=serve(bodies))
        try:
            result: object = CALLS[backend](client)
        except BackendError as exc:
            result = exc
    if isinstance(result, BackendError):
        assert backend in str(result)
    else:
        assert isinstance(result, list)
