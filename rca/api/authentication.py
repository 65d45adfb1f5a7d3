"""Intake authentication (a per-source bearer token or an HMAC-SHA256 signature of the raw body), and API
token authentication with a limit on failures per address."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from rest_framework.authentication import BaseAuthentication, TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.request import Request
from typing_extensions import override

from rca.api.throttling import ApiTokenFailureThrottle
from rca.incidents.models import IntakeToken
from rca.incidents.tokens import verify_bearer, verify_signature

SIGNATURE_HEADER = "HTTP_X_ROOTLINE_SIGNATURE"


class IntakeTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>` and/or `X-Rootline-Signature: sha256=<hex>`.

    Every credential presented must verify, for the view's `intake_source`, and at least one must be
    presented. A sender is not a user: `request.user` stays anonymous and `request.auth` is the
    IntakeToken. The view must have checked the body size before this reads the body.
    """

    keyword = "Bearer"

    @override
    def authenticate(self, request: Request) -> tuple[AnonymousUser, IntakeToken] | None:
        view = request.parser_context.get("view") if request.parser_context else None
        source: str = getattr(view, "intake_source", "")
        header = request.META.get("HTTP_AUTHORIZATION", "")
        signature = request.META.get(SIGNATURE_HEADER, "")
        token = None
        if header:
            scheme, _, value = header.partition(" ")
            if scheme.lower() != self.keyword.lower() or not value.strip():
                raise AuthenticationFailed("Authorization must be `Bearer <intake token>`.")
            token = verify_bearer(source, value.strip())
            if token is None:
                raise AuthenticationFailed(f"Invalid or inactive intake token for the {source} webhook.")
        if signature:
            signed = verify_signature(source, request._request.body, signature, only=token)
            if signed is None:
                raise AuthenticationFailed(
                    "Bad X-Rootline-Signature: expected sha256=<hex HMAC-SHA256 of the raw body> "
                    f"under an active {source} intake token's HMAC secret."
                )
            token = signed
        if token is None:
            return None
        return AnonymousUser(), token

    @override
    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="rootline-intake"'


class ThrottledTokenAuthentication(TokenAuthentication):
    """DRF's `Authorization: Token <key>`, refused with 429 once the client address has failed too often
    (ROOTLINE_API_TOKEN_FAILURE_RATE): guessing keys is limited like guessing passwords."""

    @override
    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header.split(" ", 1)[0].lower() != self.keyword.lower():
            return None  # no API token presented: another authentication may apply
        failures = ApiTokenFailureThrottle()
        if not failures.allow_request(request, None):
            raise Throttled(
                failures.wait(),
                "Too many failed API-token authentications from this address "
                f"(limit: {failures.describe()}).",
            )
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            failures.record_failure()
            raise
