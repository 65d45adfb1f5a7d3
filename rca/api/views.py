"""HTTP views of the API."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from rca.health import run_checks


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Each dependency as ok / down with the reason; 200 only when all are ok, else 503."""
    checks = run_checks()
    healthy = all(c.ok for c in checks)
    body = {
        "status": "ok" if healthy else "down",
        "checks": {c.name: {"status": "ok" if c.ok else "down", "detail": c.detail} for c in checks},
    }
    return JsonResponse(body, status=200 if healthy else 503)
