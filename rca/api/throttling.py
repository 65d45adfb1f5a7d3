"""Intake rate limits: per intake token, and per client address for failed authentications.

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
from redis.exceptions import RedisError
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from rca.incidents.models import IntakeToken

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


class IntakeFailureThrottle(_FailOpenThrottle):
    """Failed intake authentications per client address (`ROOTLINE_INTAKE_FAILURE_RATE`).

    Checked before the credentials are: once an address is over its limit, its requests are refused
    without being verified, so guessing tokens or signatures is limited too. Only failures count
    (`record_failure`), so a sender with a valid token never uses up its address's allowance.
    """

    scope = "intake_failure"
    setting = "ROOTLINE_INTAKE_FAILURE_RATE"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def throttle_success(self) -> bool:
        return True  # checking the limit does not count as an attempt

    def record_failure(self) -> None:
        """Count the failed attempt that `allow_request` was called for."""
        if self.key is None:
            return  # allow_request failed open: nothing to count against
        self.history.insert(0, self.now)
        try:
            self.cache.set(self.key, self.history, self.window()[1])
        except RedisError as exc:
            log.warning("failed intake authentication not counted, the cache is unreachable: %s", exc)
