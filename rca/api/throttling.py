"""Rate limits: per intake token; failed intake authentications per presented token (or per client
address when none is presented); failed API-token authentications per client address.

A sliding-window counter in the Django cache (Redis, shared by every web process): a count per
fixed window of the rate's period, and the estimate `previous window's count x the share of it still
inside the sliding window + this window's count`. A request costs one round trip whatever the rate:
a script that reads both counts and adds one when under the limit (rca.redis_cache); a failure limit
reads both counts, and counts a failure when one happens. DRF's own throttle keeps
every request's timestamp in one cached list that it reads and rewrites per request, which at 1,000
requests per minute is a 10 KB value (and the read-then-write lets concurrent requests miss each
other). The estimate assumes the previous window's requests were spread evenly, so a limit may be off
by a few requests at a window's edge.
When the cache is unreachable the throttles let requests through: intake must keep accepting
alerts while Redis is down (the outbox sends their investigations later), so limiting fails open.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from django.conf import settings
from django.http import HttpRequest
from redis.exceptions import RedisError
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle
from typing_extensions import override

from rca.incidents.models import IntakeToken
from rca.incidents.tokens import hash_token
from rca.redis_cache import SharedClientRedisCache

log = logging.getLogger(__name__)

PERIOD_WORDS = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}


class _FailOpenThrottle(SimpleRateThrottle):
    """A throttle whose rate is a setting read per request, and that allows when the cache is down."""

    setting: str
    counts: tuple[int, int] = (0, 0)  # (this window's count, the previous window's) as last read
    counts_requests = True  # each admitted request is counted (a failure limit counts failures only)

    def get_rate(self) -> str:
        return str(getattr(settings, self.setting))

    def allow_request(self, request: Request, view: Any) -> bool:
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        try:
            admitted = self._admit()
        except RedisError as exc:
            log.warning("rate limit not checked, the cache is unreachable: %s", exc)
            self.key = None
            return True
        return True if admitted else self.throttle_failure()

    def _admit(self) -> bool:
        """Whether the estimate is under the limit; the request is counted when it is, in the same
        atomic round trip (concurrent requests cannot all see the last free place)."""
        limit, period = self.window()
        admitted, current, previous = self._counter().count_below(
            self._window_key(0),
            self._window_key(-1),
            1 - (self.now % period) / period,  # the share of the previous window still inside the slide
            limit,
            2 * period,  # this window's count is the next one's previous
            count=self.counts_requests,
        )
        self.counts = (current, previous)
        return admitted

    def wait(self) -> float | None:
        """Seconds until the estimate falls below the limit (for Retry-After)."""
        limit, period = self.window()
        current, previous = self.counts
        into = self.now % period
        if current >= limit or previous == 0:
            return period - into  # only the next window starts afresh
        # The previous window's weight (1 - t / period) must fall until the sum is under the limit.
        fraction = 1 - (limit - current) / previous
        return max(0.0, fraction * period - into) + 1e-3

    def _window_key(self, offset: int) -> str:
        return f"{self.key}:{int(self.now // self.window()[1]) + offset}"

    def _counter(self) -> SharedClientRedisCache:
        return cast(SharedClientRedisCache, self.cache)  # settings.CACHES; DRF types it as any cache

    def _count(self) -> None:
        """Add this request to its window's count (kept for two periods: it is the next one's previous)."""
        self._counter().count(self._window_key(0), 2 * self.window()[1])

    def window(self) -> tuple[int, int]:
        """(requests allowed, in this many seconds)."""
        count, seconds = self.parse_rate(self.get_rate())
        assert count is not None  # rca.config validated the rate
        assert seconds is not None
        return count, seconds

    def describe(self) -> str:
        """The limit in words, e.g. "1200 requests per minute"."""
        count, seconds = self.window()
        return f"{count} requests per {PERIOD_WORDS[seconds]}"


class IntakeTokenThrottle(_FailOpenThrottle):
    """Requests per intake token (`ROOTLINE_INTAKE_RATE`); runs after authentication."""

    scope = "intake_token"
    setting = "ROOTLINE_INTAKE_RATE"

    @override
    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not isinstance(request.auth, IntakeToken):
            return None  # refused by the permission check before throttles run
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


class _FailureThrottle(_FailOpenThrottle):
    """Counts failed authentications only (`record_failure`): checking the limit is not an attempt."""

    counts_requests = False

    def record_failure(self) -> None:
        """Count the failed attempt that `allow_request` was called for."""
        if self.key is None:
            return  # allow_request failed open: nothing to count against
        try:
            self._count()
        except RedisError as exc:
            log.warning("failed authentication not counted, the cache is unreachable: %s", exc)


class IntakeFailureThrottle(_FailureThrottle):
    """Failed intake authentications (`ROOTLINE_INTAKE_FAILURE_RATE`), per presented bearer token, or
    per client address for a request that presents none.

    Consulted only after the credentials failed: a sender whose token verifies is never refused by it,
    however many failures others behind the same proxy address made; over the limit, a failing sender
    gets 429 with Retry-After instead of 401. Counted apart from failed logins and API tokens.
    """

    scope = "intake_failure"
    setting = "ROOTLINE_INTAKE_FAILURE_RATE"

    @override
    def get_cache_key(self, request: Request, view: Any) -> str | None:
        presented = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")[2]
        if presented.strip():
            ident = "token:" + hash_token(presented.strip())[:16]
        else:
            ident = "addr:" + (self.get_ident(request) or "")
        return self.cache_format % {"scope": self.scope, "ident": ident}


class ApiTokenFailureThrottle(_FailureThrottle):
    """Failed API-token authentications per client address (`ROOTLINE_API_TOKEN_FAILURE_RATE`); over
    it the address's token-authenticated requests get 429 before their token is looked up."""

    scope = "api_token_failure"
    setting = "ROOTLINE_API_TOKEN_FAILURE_RATE"

    @override
    def get_cache_key(self, request: Request, view: Any) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def client_address(request: HttpRequest) -> str | None:
    """The client's address as the throttles see it (X-Forwarded-For trusted for ROOTLINE_NUM_PROXIES
    proxies only), None when the request has none; also django-axes' address for failed logins."""
    ident = BaseThrottle().get_ident(request)  # type: ignore[arg-type]  # reads request.META only
    return str(ident) if ident else None
