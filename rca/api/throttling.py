"""Rate limits: per intake token; failed intake authentications per presented token (or per client
address when none is presented); failed API-token authentications per client address.

DRF's sliding-window throttle, its history kept in the Django cache (Redis, shared by every web
process). The count is read, then written back: concurrent requests of one sender can each miss the
other's entry, so under a burst a limit may let a few more through; it never refuses early.
When the cache is unreachable the throttles let requests through: intake must keep accepting
alerts while Redis is down (the outbox sends their investigations later), so limiting fails open.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from redis.exceptions import RedisError
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

from rca.incidents.models import IntakeToken
from rca.incidents.tokens import hash_token

log = logging.getLogger(__name__)

PERIOD_WORDS = {1: "second", 60: "minute", 3600: "hour", 86400: "day"}


class _FailOpenThrottle(SimpleRateThrottle):
    """A throttle whose rate is a setting read per request, and that allows when the cache is down."""

    setting: str

    def get_rate(self) -> str:
        return str(getattr(settings, self.setting))

    def allow_request(self, request: Request, view: Any) -> bool:
        try:
            return super().allow_request(request, view)
        except RedisError as exc:
            log.warning("intake rate limit not checked, the cache is unreachable: %s", exc)
            self.key = None
            return True

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

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not isinstance(request.auth, IntakeToken):
            return None  # refused by the permission check before throttles run
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


class _FailureThrottle(_FailOpenThrottle):
    """Counts failed authentications only (`record_failure`): checking the limit is not an attempt."""

    def throttle_success(self) -> bool:
        return True

    def record_failure(self) -> None:
        """Count the failed attempt that `allow_request` was called for."""
        if self.key is None:
            return  # allow_request failed open: nothing to count against
        self.history.insert(0, self.now)
        try:
            self.cache.set(self.key, self.history, self.window()[1])
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

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def client_address(request: HttpRequest) -> str | None:
    """The client's address as the throttles see it (X-Forwarded-For trusted for ROOTLINE_NUM_PROXIES
    proxies only), None when the request has none; also django-axes' address for failed logins."""
    ident = BaseThrottle().get_ident(request)  # type: ignore[arg-type]  # reads request.META only
    return str(ident) if ident else None
