"""The shared client: backoff numbers, time budget, Retry-After forms, auth and secret hygiene."""

from __future__ import annotations

import base64

import httpx
import pytest
import respx

from rca.integrations.http import BackendError, Credentials, HttpClient, HTTPFailure, RetryPolicy

URL = "http://backend:8080"


def test_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=4.0)
    assert [policy.backoff(n, lambda: 1.0) for n in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert [policy.backoff(n, lambda: 0.0) for n in range(1, 6)] == [0.25, 0.5, 1.0, 2.0, 2.0]


def test_invalid_policy_is_rejected() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


def test_total_time_budget_stops_retrying_early(sleeps) -> None:
    now = iter(range(0, 1000, 20))  # every clock reading is 20 s later: slow failing requests
    client = HttpClient(
        "prometheus",
        URL,
        retry=RetryPolicy(max_attempts=10, max_total=45.0),
        sleep=sleeps,
        clock=lambda: float(next(now)),
        rng=lambda: 1.0,
    )
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/q").mock(return_value=httpx.Response(503))
        with pytest.raises(BackendError, match=r"beyond the 45 s retry budget"):
            client.get_json("/q")
    assert route.call_count == 3
    assert sleeps == [0.5, 1.0]


def test_retry_after_as_http_date(sleeps) -> None:
    client = HttpClient("loki", URL, sleep=sleeps, wall_clock=lambda: 1714557600.0)
    later = httpx.Response(503, headers={"Retry-After": "Wed, 01 May 2024 10:00:07 GMT"})
    with respx.mock(base_url=URL) as mock:
        mock.get("/q").mock(side_effect=[later, httpx.Response(200, json={"ok": True})])
        assert client.get_json("/q") == {"ok": True}
    assert sleeps == [7.0]


def test_retry_after_beyond_the_budget_fails_at_once(sleeps) -> None:
    client = HttpClient("tempo", URL, sleep=sleeps)
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/q").mock(return_value=httpx.Response(429, headers={"Retry-After": "120"}))
        with pytest.raises(BackendError, match=r"^tempo: .*server asked to wait 120 s"):
            client.get_json("/q")
    assert route.call_count == 1
    assert sleeps == []


def test_connection_refused_names_the_backend(sleeps) -> None:
    client = HttpClient("jaeger", URL, sleep=sleeps, rng=lambda: 0.0)
    with respx.mock(base_url=URL) as mock:
        mock.get("/q").mock(side_effect=httpx.ConnectError("[Errno 111] Connection refused"))
        with pytest.raises(BackendError) as err:
            client.get_json("/q")
    assert err.value.backend == "jaeger"
    assert "unreachable (ConnectError: [Errno 111] Connection refused)" in err.value.reason
    assert sleeps == [0.25, 0.5, 1.0]


def test_secrets_are_masked_even_when_a_server_echoes_them(sleeps) -> None:
    client = HttpClient("github", URL, credentials=Credentials(token="ghp_abcdef123456"), sleep=sleeps)
    with respx.mock(base_url=URL) as mock:
        mock.get("/q").mock(return_value=httpx.Response(401, json={"message": "Bad token ghp_abcdef123456"}))
        with pytest.raises(BackendError) as err:
            client.get_json("/q")
    assert "ghp_abcdef123456" not in str(err.value)
    assert "Bad token ***" in str(err.value)
    assert "ghp_" not in repr(Credentials(token="ghp_abcdef123456"))


def test_userinfo_in_the_url_becomes_basic_auth_and_never_appears(sleeps) -> None:
    client = HttpClient("loki", "http://admin:hunter2@loki:3100/prefix", sleep=sleeps)
    assert "hunter2" not in repr(client)
    with respx.mock() as mock:
        route = mock.get("http://loki:3100/prefix/loki/api/v1/labels").mock(return_value=httpx.Response(500))
        with pytest.raises(BackendError) as err:
            client.get_json("/loki/api/v1/labels")
    expected = "Basic " + base64.b64encode(b"admin:hunter2").decode()
    assert route.calls.last.request.headers["authorization"] == expected
    assert "hunter2" not in str(err.value)
    assert "admin" not in str(err.value)
    assert "GET http://loki:3100/prefix/loki/api/v1/labels" in str(err.value)


def test_basic_credentials(sleeps) -> None:
    client = HttpClient("prometheus", URL, credentials=Credentials(username="u", password="p"), sleep=sleeps)
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/q").mock(return_value=httpx.Response(200, json=[]))
        client.get_json("/q")
    assert route.calls.last.request.headers["authorization"] == "Basic dTpw"


def test_client_errors_are_not_retried_and_quote_the_server(sleeps) -> None:
    client = HttpClient("kubernetes", URL, sleep=sleeps)
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/q").mock(return_value=httpx.Response(401, text="Unauthorized\n"))
        with pytest.raises(BackendError, match=r"failed with HTTP 401 Unauthorized: Unauthorized$"):
            client.get_json("/q")
    assert route.call_count == 1
    assert sleeps == []


def test_long_error_bodies_are_truncated(sleeps) -> None:
    client = HttpClient("loki", URL, sleep=sleeps)
    with respx.mock(base_url=URL) as mock:
        mock.get("/q").mock(return_value=httpx.Response(400, text="x" * 5000))
        with pytest.raises(BackendError) as err:
            client.get_json("/q")
    assert len(str(err.value)) < 400
    assert str(err.value).endswith("...")


def test_writes_are_sent_with_their_json_and_lookups_may_accept_a_404(sleeps) -> None:
    client = HttpClient("github", URL, sleep=sleeps)
    with respx.mock(base_url=URL) as mock:
        put = mock.put("/f").mock(return_value=httpx.Response(201, json={"ok": True}))
        mock.get("/missing").mock(return_value=httpx.Response(404, json={"message": "Not Found"}))
        assert client.request("PUT", "/f", json={"a": 1}).status_code == 201
        assert client.request("GET", "/missing", allow=(404,)).status_code == 404
    assert put.calls.last.request.content == b'{"a":1}'


def test_a_post_answered_5xx_is_not_repeated_but_reported_transient(sleeps) -> None:
    client = HttpClient("github", URL, sleep=sleeps)
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/issues").mock(return_value=httpx.Response(502))
        with pytest.raises(HTTPFailure, match=r"POST http://backend:8080/issues failed with HTTP 502") as err:
            client.request("POST", "/issues", json={})
    assert route.call_count == 1  # it may have landed: the caller looks it up before trying again
    assert (err.value.status, err.value.transient) == (502, True)


def test_a_post_is_retried_on_a_rate_limit_and_on_a_refused_connection(sleeps) -> None:
    client = HttpClient("github", URL, sleep=sleeps, rng=lambda: 1.0)
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/issues").mock(
            side_effect=[
                httpx.Response(429, headers={"Retry-After": "2"}),
                httpx.ConnectError("refused"),
                httpx.Response(201, json={}),
            ]
        )
        assert client.request("POST", "/issues", json={}).status_code == 201
    assert route.call_count == 3
    assert sleeps == [2.0, 1.0]


def test_a_post_whose_connection_drops_is_not_repeated(sleeps) -> None:
    client = HttpClient("github", URL, sleep=sleeps)
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/issues").mock(side_effect=httpx.ReadTimeout("slow"))
        with pytest.raises(HTTPFailure, match="timed out") as err:
            client.request("POST", "/issues", json={})
    assert route.call_count == 1
    assert (err.value.status, err.value.transient) == (None, True)


def test_a_client_error_is_permanent(sleeps) -> None:
    client = HttpClient("github", URL, sleep=sleeps)
    with respx.mock(base_url=URL) as mock:
        mock.post("/issues").mock(return_value=httpx.Response(422, json={"message": "Validation Failed"}))
        with pytest.raises(HTTPFailure, match="Validation Failed") as err:
            client.request("POST", "/issues", json={})
    assert (err.value.status, err.value.transient) == (422, False)
