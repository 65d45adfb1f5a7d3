"""One error shape for the whole API: `{"detail": "...", "errors": {"field.path": "reason"}}`.

`errors` appears on validation failures (400) and names each offending field with its reason, using
the same paths as intake (`alerts[0].startsAt`); every other error has `detail` only, and may add a
machine-readable `code`.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from rca.incidents.intake import _flatten_errors


class PayloadTooLarge(exceptions.APIException):
    """413: the request body is over the limit (checked before the body is read)."""

    status_code = 413
    default_detail = "Request body too large."
    default_code = "payload_too_large"


class ServiceUnavailable(exceptions.APIException):
    """503 with `Retry-After`: a dependency is overloaded or down; the same request may be sent again."""

    status_code = 503
    default_detail = "Service temporarily unavailable."
    default_code = "service_unavailable"

    def __init__(self, wait: int, detail: str) -> None:
        super().__init__(detail)
        self.wait = wait  # DRF's handler turns it into the Retry-After header


def validation_error(errors: dict[str, str], detail: str = "Invalid request.") -> Response:
    """A 400 response naming each field and its reason."""
    return Response({"detail": detail, "errors": errors}, status=400)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with validation errors flattened to field path -> reason."""
    if isinstance(exc, exceptions.ValidationError):
        set_rollback()
        return validation_error(_flatten_errors(exc.detail))
    response = drf_exception_handler(exc, context)
    if isinstance(exc, exceptions.Throttled | ServiceUnavailable) and response is not None:
        response.data["code"] = exc.default_code  # machine-readable, as the error format allows
    return response
