"""Intake rate limits: per intake token, and for failed authentications per presented token (per client
address without one), never refusing a valid token (Redis)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from rca.api.throttling import IntakeFailureThrottle, IntakeTokenThrottle
from rca.incidents.models import Alert
from rca.incidents.tokens import IssuedToken, hash_token, issue_token
from tests.conftest import free_port
from tests.integration.api.payloads import am_alert, am_payload, body, generic_alert

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

AM = "/api/v1/webhooks/alertmanager/"
GENERIC = "/api/v1/webhooks/generic/"
ADDRESS = "198.51.100.7"  # documentation range: no other test posts from it
OTHER_ADDRESS = "198.51.100.8"
GUESSES = ("rlt_guess", "rlt_other_guess", "rlt_wrong")


def failure_key(ident: str) -> str:
    return IntakeFailureThrottle.cache_format % {"scope": "intake_failure", "ident": ident}


def post(url: str, data: bytes, address: str = ADDRESS, **headers: str) -> Any:
    return APIClient().post(url, data=data, content_type="application/json", REMOTE_ADDR=address, **headers)


def bearer(issued: IssuedToken) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {issued.token}"}


def alert_body(n: int) -> bytes:
    return body(am_payload(am_alert(f"{n:016x}", n=str(n))))


@pytest.fixture
def tokens(db: None) -> Iterator[list[IssuedToken]]:
    """Two Alertmanager tokens with no history in the cache (ids restart with each test database)."""
    issued = [issue_token(f"rate-{i}", "alertmanager") for i in range(2)]
    keys = [
        IntakeTokenThrottle.cache_format % {"scope": "intake_token", "ident": t.record.pk} for t in issued
    ]
    keys += [failure_key(f"addr:{a}") for a in (ADDRESS, OTHER_ADDRESS)]
    keys += [failure_key("token:" + hash_token(guess)[:16]) for guess in GUESSES]
    # The throttles count per window of the rate's period (a minute here): `<key>:<window number>`.
    minute = int(time.time() // 60)
    windows = [f"{key}:{minute + offset}" for key in keys for offset in (-1, 0, 1)]
    cache.delete_many(windows)
    yield issued
    cache.delete_many(windows)


def test_a_token_over_its_rate_gets_429_with_retry_after(
    tokens: list[IssuedToken], settings: Settings
) -> None:
    settings.ROOTLINE_INTAKE_RATE = "3/min"
    for n in range(3):
        assert post(AM, alert_body(n), **bearer(tokens[0])).status_code == 202

    refused = post(AM, alert_body(3), **bearer(tokens[0]))

    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    error = refused.json()
    assert error["code"] == "throttled"
    assert "Intake rate limit exceeded" in error["detail"]
    assert tokens[0].record.prefix in error["detail"]
    assert "3 requests per minute" in error["detail"]
    assert Alert.objects.count() == 3  # the refused batch was not stored


def test_one_tokens_flood_does_not_throttle_another(tokens: list[IssuedToken], settings: Settings) -> None:
    settings.ROOTLINE_INTAKE_RATE = "2/min"
    flood = [post(AM, alert_body(n), **bearer(tokens[0])).status_code for n in range(5)]
    assert flood == [202, 202, 429, 429, 429]

    # Same address, other token: its own allowance.
    assert post(AM, alert_body(10), **bearer(tokens[1])).status_code == 202
    assert post(AM, alert_body(11), **bearer(tokens[1])).status_code == 202
    assert post(AM, alert_body(12), **bearer(tokens[1])).status_code == 429


def test_failed_authentications_are_limited_per_presented_token(
    tokens: list[IssuedToken], settings: Settings
) -> None:
    settings.ROOTLINE_INTAKE_FAILURE_RATE = "2/min"
    guess = {"HTTP_AUTHORIZATION": "Bearer rlt_guess"}
    assert post(AM, alert_body(0), **guess).status_code == 401
    assert post(AM, alert_body(0), **guess).status_code == 401

    guessing = post(AM, alert_body(0), **guess)
    assert guessing.status_code == 429
    assert "failed intake authentications" in guessing.json()["detail"]
    assert int(guessing["Retry-After"]) > 0
    # A valid token from the same address is never refused by the failure limit (senders behind one
    # proxy share an address), and another presented token has its own count.
    assert post(AM, alert_body(0), **bearer(tokens[0])).status_code == 202
    assert post(AM, alert_body(1), HTTP_AUTHORIZATION="Bearer rlt_other_guess").status_code == 401


def test_requests_without_a_token_are_limited_per_address(
    tokens: list[IssuedToken], settings: Settings
) -> None:
    settings.ROOTLINE_INTAKE_FAILURE_RATE = "1/min"
    assert post(AM, alert_body(0)).status_code == 401  # no credentials at all counts
    assert post(AM, alert_body(0)).status_code == 429
    assert post(AM, alert_body(0), OTHER_ADDRESS).status_code == 401  # another address: its own count
    assert post(AM, alert_body(0), **bearer(tokens[0])).status_code == 202


def test_successful_requests_do_not_use_the_failure_allowance(
    tokens: list[IssuedToken], settings: Settings
) -> None:
    settings.ROOTLINE_INTAKE_FAILURE_RATE = "1/min"
    for n in range(4):
        assert post(AM, alert_body(n), **bearer(tokens[0])).status_code == 202
    assert post(AM, alert_body(9), HTTP_AUTHORIZATION="Bearer rlt_wrong").status_code == 401


def test_a_forged_forwarded_for_does_not_escape_the_failure_limit(
    tokens: list[IssuedToken], settings: Settings
) -> None:
    """With no proxy configured the peer address counts, whatever X-Forwarded-For claims."""
    settings.ROOTLINE_INTAKE_FAILURE_RATE = "1/min"
    assert post(AM, b"{}", HTTP_X_FORWARDED_FOR="203.0.113.1").status_code == 401
    assert post(AM, b"{}", HTTP_X_FORWARDED_FOR="203.0.113.2").status_code == 429


def test_limits_fail_open_when_the_cache_is_down(tokens: list[IssuedToken], settings: Settings) -> None:
    """Redis down must not stop intake (the outbox covers the broker); the limits are skipped."""
    settings.ROOTLINE_INTAKE_RATE = "1/min"
    settings.ROOTLINE_INTAKE_FAILURE_RATE = "1/min"
    settings.CACHES = {
        "default": {
            "BACKEND": "rca.redis_cache.SharedClientRedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    assert post(AM, b"{}", HTTP_AUTHORIZATION="Bearer rlt_wrong").status_code == 401
    assert post(AM, b"{}", HTTP_AUTHORIZATION="Bearer rlt_wrong").status_code == 401
    assert [post(AM, alert_body(n), **bearer(tokens[0])).status_code for n in range(3)] == [202] * 3


def test_generic_webhook_is_limited_per_token_too(db: None, settings: Settings) -> None:
    issued = issue_token("rate-generic", "generic")
    cache.delete(IntakeTokenThrottle.cache_format % {"scope": "intake_token", "ident": issued.record.pk})
    settings.ROOTLINE_INTAKE_RATE = "1/min"
    assert post(GENERIC, body(generic_alert()), **bearer(issued)).status_code == 202
    assert post(GENERIC, body(generic_alert(external_id="b")), **bearer(issued)).status_code == 429


def test_the_schema_documents_429_on_both_webhooks(viewer: APIClient) -> None:
    schema = viewer.get("/api/v1/schema/").json()
    for path in (AM, GENERIC):
        responses = schema["paths"][path]["post"]["responses"]
        assert "429" in responses
        assert "Retry-After" in responses["429"]["description"]


def test_the_previous_windows_requests_count_for_the_share_still_inside_the_sliding_window(
    settings: Settings,
) -> None:
    """Sliding-window counter: 10/min with 8 requests last minute and 2 this minute, 15 s into it,
    estimates 8 x 0.75 + 2 = 8 (allowed); Retry-After once over the limit is when the estimate
    falls under it."""
    settings.ROOTLINE_INTAKE_RATE = "10/min"
    throttle = IntakeTokenThrottle()
    throttle.key = "throttle_intake_token_sliding-window-test"
    throttle.now = 60 * 1000 + 15.0
    this, last = throttle._window_key(0), throttle._window_key(-1)
    cache.set_many({this: 2, last: 8})
    assert throttle._admit()  # estimated 8 x 0.75 + 2 = 8 < 10: admitted, and counted
    assert throttle.counts == (2, 8)
    assert cache.get(this) == 3
    cache.set(this, 5)
    assert not throttle._admit()  # 8 x 0.75 + 5 = 11 >= 10: refused, not counted
    assert cache.get(this) == 5
    # The previous window must weigh < 5 / 8 for the estimate to fall under the limit.
    assert throttle.wait() == pytest.approx(60 * (1 - 5 / 8) - 15 + 1e-3)
    throttle.counts = (10, 0)  # this window alone is full: wait for the next
    assert throttle.wait() == pytest.approx(45.0)
