"""Health, the OpenAPI schema, the offline docs page and the security headers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import drf_spectacular
import jsonschema
import pytest
from django.test import Client
from rest_framework.test import APIClient

from rca import health
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

ENDPOINTS = {
    "/api/v1/webhooks/alertmanager/": {"post"},
    "/api/v1/webhooks/generic/": {"post"},
    "/api/v1/incidents/": {"get"},
    "/api/v1/incidents/{id}/": {"get"},
    "/api/v1/incidents/{id}/comments/": {"get", "post"},
    "/api/v1/investigations/{id}/": {"get"},
    "/api/v1/investigations/{id}/rerun/": {"post"},
    "/api/v1/actions/": {"get"},
    "/api/v1/actions/{id}/": {"get"},
    "/api/v1/actions/{id}/approve/": {"post"},
    "/api/v1/actions/{id}/reject/": {"post"},
    "/api/v1/search/": {"get"},
    "/api/v1/health/": {"get"},
}


@pytest.fixture
def fast_checks(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    checks: dict[str, object] = {"database": lambda: "ok", "broker": lambda: "ok"}
    monkeypatch.setattr(health, "CHECKS", checks)
    return checks


def test_api_health_is_the_same_report_as_healthz(fast_checks: dict[str, object]) -> None:
    api = Client().get("/api/v1/health/")
    plain = Client().get("/healthz")
    assert api.status_code == plain.status_code == 200
    assert (
        api.json()
        == plain.json()
        == {
            "status": "ok",
            "checks": {
                "database": {"status": "ok", "detail": "ok"},
                "broker": {"status": "ok", "detail": "ok"},
            },
        }
    )

    def down() -> str:
        raise ConnectionError("refused")

    fast_checks["broker"] = down
    api = Client().get("/api/v1/health/")
    assert api.status_code == Client().get("/healthz").status_code == 503
    assert api.json()["checks"]["broker"] == {"status": "down", "detail": "ConnectionError: refused"}


def test_schema_is_valid_openapi_3_with_every_endpoint(viewer: APIClient) -> None:
    response = viewer.get("/api/v1/schema/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json")
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    meta = json.loads(
        (Path(drf_spectacular.__file__).parent / "validation" / "openapi_3_0_schema.json").read_text()
    )
    jsonschema.validate(schema, meta)
    for path, methods in ENDPOINTS.items():
        assert path in schema["paths"], path
        assert methods <= set(schema["paths"][path]), path
    security = schema["paths"]["/api/v1/webhooks/alertmanager/"]["post"]["security"]
    assert security == [{"intakeBearer": []}, {"intakeSignature": []}]  # either one
    assert "tokenAuth" in schema["components"]["securitySchemes"]


def test_every_operation_that_reads_a_body_documents_the_415_for_one_it_cannot_parse(
    viewer: APIClient, responder: APIClient
) -> None:
    """DRF answers 415 when a body's declared media type has no parser (schemathesis met one on the
    assign endpoint, where it was undocumented); a client must find that answer in the schema wherever
    a body is read."""
    schema = json.loads(viewer.get("/api/v1/schema/").content)
    reading = [
        (path, method)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "requestBody" in operation
    ]
    assert ("/api/v1/incidents/{id}/assign/", "post") in reading
    undocumented = [
        (path, method) for path, method in reading if "415" not in schema["paths"][path][method]["responses"]
    ]
    assert undocumented == []
    incident = factories.incident()
    response = responder.post(
        f"/api/v1/incidents/{incident.pk}/assign/", data=b"assignee=", content_type="text/plain"
    )
    assert response.status_code == 415
    assert "detail" in response.json()


def test_schema_needs_a_user() -> None:
    assert APIClient().get("/api/v1/schema/").status_code == 401


def test_docs_page_is_served_from_the_host_only() -> None:
    client = Client()
    client.force_login(factories.user("viewer"))
    page = client.get("/api/v1/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "<style" not in html
    assert "<script>" not in html
    refs = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert refs
    assert all(ref.startswith("/") for ref in refs), refs  # no other host
    for ref in refs:
        asset = client.get(ref)
        assert asset.status_code == 200, ref
        if ref.endswith("script="):
            body = asset.content.decode()
            assert '"validatorUrl": null' in body  # Swagger UI would otherwise call validator.swagger.io
            assert "/api/v1/schema/" in body
    assert "Content-Security-Policy" in page


def test_security_headers_everywhere(viewer: APIClient, fast_checks: dict[str, object]) -> None:
    for response in (
        viewer.get("/api/v1/incidents/"),
        Client().get("/api/v1/health/"),
        Client().get("/admin/login/"),
        Client().get("/login/"),
    ):
        assert response.status_code == 200
        csp = response["Content-Security-Policy"]
        assert "default-src 'self'" in csp
        assert "script-src 'self'" in csp
        assert "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert response["Cross-Origin-Opener-Policy"] == "same-origin"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["X-Frame-Options"] == "DENY"


def test_admin_still_works_under_the_policy() -> None:
    client = Client()
    client.force_login(factories.user(None, is_staff=True, is_superuser=True))
    assert client.get("/admin/").status_code == 200
    assert client.get("/admin/incidents/actionproposal/").status_code == 200
