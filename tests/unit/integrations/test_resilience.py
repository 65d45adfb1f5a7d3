"""The six behaviours every live connector must show, replayed from recorded exchanges.

For each connector: a normal answer, an empty answer, a 429 then success (Retry-After obeyed
through the injected sleep), a 5xx retried until the budget is spent, malformed JSON, and a
timeout -- the last three as a BackendError that names the backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import respx

from rca.integrations.github.changes import GitHubConnector
from rca.integrations.http import BackendError, HttpClient
from rca.integrations.jaeger.connector import JaegerConnector
from rca.integrations.kubernetes.connector import KubernetesConnector
from rca.integrations.loki.connector import LokiConnector
from rca.integrations.prometheus.connector import PrometheusConnector
from rca.integrations.tempo.connector import TempoConnector

from .recorded import WINDOW, Sleeps, reply


@dataclass(frozen=True)
class Case:
    backend: str
    url: str
    path: str  # the connector's first request, which the failure scenarios hit
    normal: str  # fixture name of the normal answer to `path`
    normal_count: int  # model objects the normal answer (plus follow-ups) yields
    empty: str
    retry_after: float  # the Retry-After of the fixture's 429
    build: Callable[[HttpClient], Any]
    call: Callable[[Any], list[Any]]
    secondary: Callable[[respx.MockRouter], None] = lambda mock: None  # follow-up requests


def _tempo_traces(mock: respx.MockRouter) -> None:
    mock.get("/api/traces/4bf92f3577b34da6a3ce929d0e0e4736").mock(return_value=reply("tempo", "trace_v1"))
    mock.get("/api/traces/00000000000000001a2b3c4d5e6f7081").mock(return_value=reply("tempo", "trace_v2"))


def _github_rest(mock: respx.MockRouter) -> None:
    mock.get("/repos/acme/shop/commits", params__contains={"page": "2"}).mock(
        return_value=reply("github", "commits_page2")
    )
    mock.get("/repos/acme/shop/pulls").mock(return_value=reply("github", "pulls_page1"))


CASES = [
    Case(
        backend="prometheus",
        url="http://prometheus:9090",
        path="/api/v1/query_range",
        normal="query_range",
        normal_count=2,
        empty="query_range_empty",
        retry_after=2,
        build=PrometheusConnector,
        call=lambda c: c.query_range("process_resident_memory_bytes", WINDOW, entity="cartservice"),
    ),
    Case(
        backend="loki",
        url="http://loki:3100",
        path="/loki/api/v1/query_range",
        normal="query_range",
        normal_count=5,
        empty="query_range_empty",
        retry_after=3,
        build=LokiConnector,
        call=lambda c: c.logs("cartservice", WINDOW),
    ),
    Case(
        backend="tempo",
        url="http://tempo:3200",
        path="/api/search",
        normal="search",
        normal_count=7,
        empty="search_empty",
        retry_after=1,
        build=TempoConnector,
        call=lambda c: c.spans(WINDOW, "cartservice"),
        secondary=_tempo_traces,
    ),
    Case(
        backend="jaeger",
        url="http://jaeger:16686",
        path="/api/traces",
        normal="traces",
        normal_count=3,
        empty="traces_empty",
        retry_after=4,
        build=JaegerConnector,
        call=lambda c: c.spans(WINDOW, "cartservice"),
    ),
    Case(
        backend="kubernetes",
        url="https://kubernetes.default.svc",
        path="/apis/events.k8s.io/v1/namespaces/shop/events",
        normal="events_v1",
        normal_count=4,
        empty="empty",
        retry_after=1,
        build=lambda client: KubernetesConnector(client, namespaces=["shop"]),
        call=lambda c: c.events(WINDOW),
    ),
    Case(
        backend="github",
        url="https://api.github.com",
        path="/repos/acme/shop/commits",
        normal="commits_page1",
        normal_count=3,
        empty="commits_empty",
        retry_after=5,
        build=lambda client: GitHubConnector(client, repo="acme/shop"),
        call=lambda c: c.events(WINDOW),
        secondary=_github_rest,
    ),
]
IDS = [c.backend for c in CASES]


def _run(case: Case, make_client: Callable[..., HttpClient], side_effect: Any) -> tuple[Any, respx.Route]:
    with respx.mock(base_url=case.url, assert_all_called=False) as mock:
        case.secondary(mock)
        route = mock.get(case.path).mock(side_effect=side_effect)
        connector = case.build(make_client(case.backend, case.url))
        try:
            return case.call(connector), route
        except BackendError as exc:
            return exc, route


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_normal_answer(case: Case, make_client: Callable[..., HttpClient], sleeps: Sleeps) -> None:
    result, route = _run(case, make_client, [reply(case.backend, case.normal)])
    assert isinstance(result, list), result
    assert len(result) == case.normal_count
    assert route.call_count == 1
    assert sleeps == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_empty_answer(case: Case, make_client: Callable[..., HttpClient], sleeps: Sleeps) -> None:
    empty = reply(case.backend, case.empty)
    # GitHub's pull request listing is asked too; make that empty as well.
    with respx.mock(base_url=case.url, assert_all_called=False) as mock:
        mock.get("/repos/acme/shop/pulls").mock(return_value=reply("github", "pulls_empty"))
        route = mock.get(case.path).mock(return_value=empty)
        result = case.call(case.build(make_client(case.backend, case.url)))
    assert result == []
    assert route.call_count == 1
    assert sleeps == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_429_then_success_honours_retry_after(
    case: Case, make_client: Callable[..., HttpClient], sleeps: Sleeps
) -> None:
    result, route = _run(
        case, make_client, [reply(case.backend, "rate_limited"), reply(case.backend, case.normal)]
    )
    assert isinstance(result, list), result
    assert len(result) == case.normal_count
    assert route.call_count == 2
    assert sleeps == [case.retry_after]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_5xx_is_retried_then_named_error(
    case: Case, make_client: Callable[..., HttpClient], sleeps: Sleeps
) -> None:
    result, route = _run(case, make_client, lambda request: reply(case.backend, "unavailable"))
    assert isinstance(result, BackendError)
    assert result.backend == case.backend
    assert str(result).startswith(f"{case.backend}: ")
    assert "after 4 attempts" in result.reason
    assert "HTTP 5" in result.reason
    assert route.call_count == 4
    assert sleeps == [0.5, 1.0, 2.0]  # exponential; rng pinned to the top of the jitter range
    assert "s3cret" not in str(result)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_malformed_json_is_a_named_error(
    case: Case, make_client: Callable[..., HttpClient], sleeps: Sleeps
) -> None:
    result, route = _run(case, make_client, [reply(case.backend, "malformed")])
    assert isinstance(result, BackendError)
    assert result.backend == case.backend
    assert "malformed JSON" in result.reason
    assert case.path in result.reason
    assert route.call_count == 1  # a garbled body is not retried
    assert sleeps == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_timeout_is_a_named_error(case: Case, make_client: Callable[..., HttpClient], sleeps: Sleeps) -> None:
    result, route = _run(case, make_client, httpx.ReadTimeout("timed out"))
    assert isinstance(result, BackendError)
    assert result.backend == case.backend
    assert "timed out after 10 s" in result.reason
    assert route.call_count == 4
    assert len(sleeps) == 3
