"""Property-based run of every operation in the OpenAPI schema against the WSGI app: no 5xx, ever.

Schemathesis generates valid and invalid requests from `/api/v1/schema/`; each is sent with working
credentials (an intake token on the webhooks, an approver's DRF token elsewhere) so the requests get
past authentication and reach validation and the services. Bounded: a few dozen examples per operation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import status_code_conformance

from rca import health
from rca.incidents.tokens import issue_token
from rca.wsgi import application
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db, pytest.mark.slow]

# Examples per operation: bounded so the whole run stays within seconds of CI time, not minutes.
MAX_EXAMPLES = 10


@pytest.fixture
def raw_wsgi() -> Iterator[None]:
    """Keep the test's connection (and its transaction) open across raw WSGI calls.

    A WSGI request closes the database connection when it finishes; Django's test client disconnects
    that handler, and so must anything else that calls the application inside a test transaction.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def credentials(raw_wsgi: None, db: None, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Authorization headers by route kind, and a few rows for the generated ids to hit."""
    monkeypatch.setattr(health, "CHECKS", {"database": lambda: "ok"})
    for _ in range(3):
        factories.proposal()
    approver = factories.user("approver")
    return {
        "alertmanager": f"Bearer {issue_token('fuzz-am', 'alertmanager').token}",
        "generic": f"Bearer {issue_token('fuzz-generic', 'generic').token}",
        "user": f"Token {Token.objects.create(user=approver).key}",
    }


def _schema() -> Any:
    """The schema `/api/v1/schema/` serves, generated in-process (no request, no database needed)."""
    loaded = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    loaded.app = application  # requests go to the WSGI app itself, as `from_wsgi` would arrange
    return loaded


# (`schemathesis.pytest.from_fixture` would load it over HTTP, but it does not run under pytest 9.)
schema = _schema()


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_no_server_errors(case: Any, credentials: dict[str, str]) -> None:
    path: str = case.path
    kind = next((k for k in ("alertmanager", "generic") if path.endswith(f"/webhooks/{k}/")), "user")
    response = case.call(headers={"Authorization": credentials[kind]})
    case.validate_response(response, checks=[not_a_server_error, status_code_conformance])


def test_every_security_scheme_the_schema_references_is_defined() -> None:
    generated = SchemaGenerator().get_schema(request=None, public=True)
    defined = set(generated["components"]["securitySchemes"])
    referenced = {
        name
        for operations in generated["paths"].values()
        for operation in operations.values()
        for requirement in operation.get("security", [])
        for name in requirement
    }
    assert {"intakeBearer", "intakeSignature"} <= referenced
    assert referenced <= defined, referenced - defined
