"""The one HTTP client every integration uses: telemetry connectors, the GitHub repository, Slack.

It owns the policy that makes a flaky system survivable and a dead one explicit: a per-request
timeout, bounded retries with exponential backoff and jitter on 429 / 5xx / transport errors
(honouring `Retry-After`), JSON decoding, and conversion of every failure into
`BackendError(backend, reason)`. Messages never carry credentials: auth travels in headers
that are never printed, user-info is stripped from URLs, and known secrets are masked in any
text a server echoes back.
"""

from __future__ import annotations

import email.utils
import random
import ssl
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Self

import httpx

from rca.integrations.parsing import ShapeError

Params = Mapping[str, str | int | float | Sequence[str]]

_DETAIL_LIMIT = 240  # characters of a server's error text kept in a message


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try before declaring a backend down.

    Defaults: 4 attempts in all; delays 0.5 s, 1 s, 2 s (doubling, capped at 8 s) with equal
    jitter (each delay is uniformly drawn from [d/2, d] so that many workers do not retry in
    step); everything, requests included, within 30 s. A `Retry-After` is obeyed exactly, but
    if it lies beyond the remaining budget the request fails at once rather than hanging.
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_total: float = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < 0 or self.max_total < 0:
            raise ValueError("retry delays and budget must not be negative")

    def backoff(self, retry: int, rng: Callable[[], float]) -> float:
        """Delay before retry number `retry` (1-based): exponential, capped, equal jitter."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        return ceiling / 2 + rng() * ceiling / 2


class IntegrationError(RuntimeError):
    """An external system did not do what was asked; the message says why, fit to show as it is."""


class BackendError(IntegrationError):
    """A request to one system failed or was answered in a shape its API does not document; the
    message names the system (`backend`) and the reason."""

    def __init__(self, backend: str, reason: str) -> None:
        super().__init__(f"{backend}: {reason}")
        self.backend = backend
        self.reason = reason


class HTTPFailure(BackendError):
    """A request that got no usable answer: `status` is the last HTTP status (None when the server
    was unreachable), `transient` says whether trying again later may succeed (429, 5xx, timeouts)."""

    def __init__(self, backend: str, reason: str, *, status: int | None, transient: bool) -> None:
        super().__init__(backend, reason)
        self.status = status
        self.transient = transient


@dataclass(frozen=True, slots=True)
class Credentials:
    """Bearer token, or username + password for basic auth. Never printed."""

    token: str | None = None
    username: str | None = None
    password: str | None = None

    def __repr__(self) -> str:
        kind = "bearer" if self.token else "basic" if self.username else "none"
        return f"Credentials({kind})"

    def secrets(self) -> list[str]:
        """The secret strings to mask in any message."""
        return [s for s in (self.token, self.password) if s]


class HttpClient:
    """A sync HTTP client for one system: base URL, auth, timeout, retries, JSON, clear errors."""

    def __init__(
        self,
        backend: str,
        base_url: str,
        *,
        credentials: Credentials | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        verify: bool | str = True,
        headers: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.backend = backend
        url = httpx.URL(base_url)
        credentials = credentials or Credentials()
        if url.username and not (credentials.token or credentials.username):
            # http://user:pass@host is a common way to write settings; move it into basic auth.
            credentials = Credentials(username=url.username, password=url.password or None)
        self._credentials = credentials
        self.base_url = url.copy_with(username=None, password=None)
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self._wall_clock = wall_clock
        self._rng = rng
        auth: httpx.Auth | None = None
        all_headers = {"Accept": "application/json", "User-Agent": "rootline-rca"}
        all_headers.update(headers or {})
        if credentials.token:
            all_headers["Authorization"] = f"Bearer {credentials.token}"
        elif credentials.username:
            auth = httpx.BasicAuth(credentials.username, credentials.password or "")
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=all_headers,
            auth=auth,
            timeout=timeout,
            verify=ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify,
            follow_redirects=False,  # a redirect could carry the Authorization header elsewhere
        )

    # --- lifecycle ---

    def close(self) -> None:
        """Release the connection pool."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HttpClient({self.backend!r}, {str(self.base_url)!r})"

    # --- errors ---

    def error(self, reason: str) -> BackendError:
        """A BackendError for this system with secrets masked out of `reason`."""
        for secret in self._credentials.secrets():
            reason = reason.replace(secret, "***")
        return BackendError(self.backend, reason)

    @contextmanager
    def parsing(self, what: str) -> Iterator[None]:
        """Turn shape errors raised while reading `what` into a BackendError naming the system."""
        try:
            yield
        except (ShapeError, ValueError, TypeError, KeyError) as exc:
            raise self.error(f"unexpected response shape in {what}: {exc}") from exc

    # --- requests ---

    def get_json(self, path: str, params: Params | None = None) -> Any:
        """GET `path` (relative to the base URL) and decode its JSON body."""
        return self.decode(self.get(path, params))

    def get_page(self, url: str, params: Params | None = None) -> tuple[Any, str | None]:
        """GET one page and return (JSON body, next page URL from the `Link` header or None).

        Next links pointing at another origin are refused: following them would send our
        credentials to a host we were not configured for.
        """
        response = self.get(url, params)
        body = self.decode(response)
        link = response.links.get("next", {}).get("url")
        if not link:
            return body, None
        target = httpx.URL(link)
        if (target.scheme, target.host, target.port) != (
            self.base_url.scheme,
            self.base_url.host,
            self.base_url.port,
        ):
            raise self.error(f"refusing to follow a pagination link to another host ({target.host})")
        return body, link

    def decode(self, response: httpx.Response) -> Any:
        """The JSON body of `response`, or a BackendError saying it is malformed."""
        try:
            return response.json()
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
            raise self.error(
                f"malformed JSON in response to {self._describe(response.request)}: {exc}"
            ) from exc

    def get(self, path: str, params: Params | None = None) -> httpx.Response:
        """GET with retries; a 2xx response, or an `HTTPFailure` explaining why there is none."""
        return self.request("GET", path, params=params)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        json: Any = None,
        allow: Collection[int] = (),
    ) -> httpx.Response:
        """Send with retries; a 2xx response or one whose status is in `allow` (for the caller to
        read, e.g. a 404 from a lookup), else an `HTTPFailure` explaining why there is none.

        A POST is retried here only on rate limits and refused connections: after a 5xx or a lost
        connection it may have taken effect, so repeating it is left to a caller that can first look
        up what the first attempt did (`HTTPFailure.transient` says it may).
        """
        request = self._http.build_request(method, path, params=params, json=json)
        deadline = self._clock() + self.retry.max_total
        attempt = 0
        while True:
            attempt += 1
            failure: str
            status: int | None = None
            wait: float | None = None
            try:
                response = self._http.send(request)
            except httpx.TransportError as exc:
                failure = (
                    f"timed out after {self.timeout:g} s ({type(exc).__name__})"
                    if isinstance(exc, httpx.TimeoutException)
                    else f"unreachable ({type(exc).__name__}: {exc})"
                )
                if method == "POST" and not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                    # The request may have arrived: the caller looks up what it did before retrying.
                    raise self._failure(f"{self._describe(request)} failed: {failure}", None, True) from exc
            else:
                if response.is_success or response.status_code in allow:
                    return response
                status = response.status_code
                failure = f"HTTP {status} {response.reason_phrase}".rstrip()
                detail = self._error_detail(response)
                if detail:
                    failure += f": {detail}"
                transient = self._retryable(response)
                # A POST answered with a 5xx may have taken effect: the caller looks before repeating it.
                if not transient or (method == "POST" and status >= 500):
                    raise self._failure(f"{self._describe(request)} failed with {failure}", status, transient)
                wait = self._retry_after(response)
            if attempt >= self.retry.max_attempts:
                raise self._failure(
                    f"{self._describe(request)} failed after {attempt} attempts: {failure}", status, True
                )
            delay = wait if wait is not None else self.retry.backoff(attempt, self._rng)
            remaining = deadline - self._clock()
            if delay > remaining:
                asked = f"server asked to wait {delay:g} s" if wait is not None else f"next wait {delay:g} s"
                raise self._failure(
                    f"{self._describe(request)} failed after {attempt} attempts "
                    f"({asked}, beyond the {self.retry.max_total:g} s retry budget): {failure}",
                    status,
                    True,
                )
            self._sleep(delay)

    # --- internals ---

    def _failure(self, reason: str, status: int | None, transient: bool) -> HTTPFailure:
        error = self.error(reason)
        return HTTPFailure(error.backend, error.reason, status=status, transient=transient)

    def _describe(self, request: httpx.Request) -> str:
        # Scheme, host and path only: query strings can be long and user-info is already gone.
        url = request.url
        return f"{request.method} {url.scheme}://{url.netloc.decode()}{url.path}"

    @staticmethod
    def _retryable(response: httpx.Response) -> bool:
        if response.status_code == 429 or response.status_code >= 500:
            return True
        # GitHub signals rate limits as 403 with Retry-After or an exhausted quota.
        return response.status_code == 403 and (
            "retry-after" in response.headers or response.headers.get("x-ratelimit-remaining") == "0"
        )

    def _retry_after(self, response: httpx.Response) -> float | None:
        """Seconds the server asked us to wait (Retry-After seconds or HTTP-date, or a rate reset)."""
        value = response.headers.get("retry-after")
        if value is not None:
            value = value.strip()
            if value.isdigit():
                return float(value)
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                return None
            return max(0.0, when.timestamp() - self._wall_clock())
        reset = response.headers.get("x-ratelimit-reset")
        if response.headers.get("x-ratelimit-remaining") == "0" and reset and reset.isdigit():
            return max(0.0, float(reset) - self._wall_clock())
        return None

    def _error_detail(self, response: httpx.Response) -> str:
        """The server's own explanation, from the error shapes the supported APIs use."""
        try:
            text = response.text
        except (UnicodeDecodeError, httpx.ResponseNotRead):
            return ""
        detail = text.strip()
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict):
            parts: list[str] = []
            if isinstance(body.get("errorType"), str):  # Prometheus / Loki JSON errors
                parts.append(body["errorType"])
            for key in ("error", "message", "msg"):  # Prometheus, GitHub / Kubernetes Status
                if isinstance(body.get(key), str):
                    parts.append(body[key])
            errors = body.get("errors")  # Jaeger: {"errors": [{"code": 500, "msg": "..."}]}
            if isinstance(errors, list):
                parts.extend(str(e.get("msg", e)) if isinstance(e, dict) else str(e) for e in errors)
            if parts:
                detail = ": ".join(parts)
        detail = " ".join(detail.split())
        return detail[:_DETAIL_LIMIT] + ("..." if len(detail) > _DETAIL_LIMIT else "")


# Writes (an issue, a pull request, a chat message) get a longer budget than telemetry reads: nobody is
# waiting on an approved action's page.
WRITE_RETRY = RetryPolicy(max_attempts=5, base_delay=1.0, max_delay=30.0, max_total=120.0)
WRITE_TIMEOUT = 20.0  # seconds per request


def writing_client(
    backend: str,
    base_url: str,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    budget_s: float | None = None,
) -> HttpClient:
    """A client for sending writes to `backend` (bearer `token`, WRITE_RETRY, WRITE_TIMEOUT); with
    `budget_s` (a preview), one attempt per request within that budget instead."""
    retry, timeout = (
        (WRITE_RETRY, WRITE_TIMEOUT)
        if budget_s is None
        else (RetryPolicy(max_attempts=1, max_total=budget_s), budget_s)
    )
    return HttpClient(
        backend,
        base_url,
        credentials=Credentials(token=token),
        retry=retry,
        timeout=timeout,
        headers=headers,
    )
