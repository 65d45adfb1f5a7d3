"""A strict Content-Security-Policy on every response (Django 5.2 has no CSP middleware of its own), and
chunked request bodies read like any other."""

from __future__ import annotations

import io
from collections.abc import Callable

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponseBase, JsonResponse


class ContentSecurityPolicyMiddleware:
    """Adds `settings.CONTENT_SECURITY_POLICY` unless the view set a policy of its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.policy: str = getattr(settings, "CONTENT_SECURITY_POLICY", "")

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        """The view's response, with the policy added."""
        response = self.get_response(request)
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response


class ChunkedBodyMiddleware:
    """Reads a chunked request body (no Content-Length) that the WSGI server has de-chunked.

    Django sizes `request.body` by Content-Length alone, so a valid chunked delivery looked empty. When
    the server marks its input as terminated (gunicorn does, PEP 3333's `wsgi.input_terminated`), the
    body is read here, at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes (413 beyond), and given its length.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        """The view's response, a chunked body read first."""
        meta = request.META
        chunked = "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not meta.get("CONTENT_LENGTH") and meta.get("wsgi.input_terminated"):
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            body = meta["wsgi.input"].read(limit + 1)
            if len(body) > limit:
                return JsonResponse(
                    {"detail": f"Request body over {limit} bytes.", "code": "payload_too_large"}, status=413
                )
            meta["CONTENT_LENGTH"] = str(len(body))
            request._stream = LimitedStream(io.BytesIO(body), len(body))  # type: ignore[assignment]
        return self.get_response(request)
