"""The authorization matrix: every endpoint x every kind of caller -> the expected status.

Callers: anonymous; an authenticated user with no role; viewer; responder; approver (DRF tokens);
and an intake sender (a valid intake token for the webhook it calls, the Alertmanager one elsewhere).
"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from rca import health
from rca.incidents.models import Comment
from rca.incidents.tokens import issue_token
from tests.integration.api import factories
from tests.integration.api.payloads import am_payload, body, generic_alert

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _repository(settings: Any) -> None:
    factories.configure_repository(settings)


CALLERS = ("anonymous", "norole", "viewer", "responder", "approver", "intake")
READ = {"anonymous": 401, "norole": 403, "viewer": 200, "responder": 200, "approver": 200, "intake": 401}
INTAKE = {"anonymous": 401, "norole": 401, "viewer": 401, "responder": 401, "approver": 401, "intake": 202}

# (name, method, url template, body, expected status per caller)
MATRIX: list[tuple[str, str, str, Any, dict[str, int]]] = [
    ("incident list", "get", "/api/v1/incidents/", None, READ),
    ("incident detail", "get", "/api/v1/incidents/{incident}/", None, READ),
    ("investigation detail", "get", "/api/v1/investigations/{investigation}/", None, READ),
    (
        "rerun",
        "post",
        "/api/v1/investigations/{investigation}/rerun/",
        None,
        {**READ, "viewer": 403, "responder": 202, "approver": 202},
    ),
    ("action list", "get", "/api/v1/actions/", None, READ),
    ("action detail", "get", "/api/v1/actions/{action}/", None, READ),
    (
        "approve",
        "post",
        "/api/v1/actions/{action}/approve/",
        {"reason": "matrix"},
        {**READ, "viewer": 403, "responder": 403},
    ),
    ("reject", "post", "/api/v1/actions/{action}/reject/", {"reason": "matrix"}, {**READ, "viewer": 403}),
    ("comment list", "get", "/api/v1/incidents/{incident}/comments/", None, READ),
    (
        "comment",
        "post",
        "/api/v1/incidents/{incident}/comments/",
        {"body": "matrix"},
        {**READ, "viewer": 403, "responder": 201, "approver": 201},
    ),
    ("search", "get", "/api/v1/search/?q=checkout", None, READ),
    ("schema", "get", "/api/v1/schema/", None, READ),
    ("docs", "get", "/api/v1/docs/", None, READ),
    ("health", "get", "/api/v1/health/", None, dict.fromkeys(CALLERS, 200)),
    ("alertmanager webhook", "post", "/api/v1/webhooks/alertmanager/", am_payload(), INTAKE),
    ("generic webhook", "post", "/api/v1/webhooks/generic/", generic_alert(), INTAKE),
]


def client(caller: str, url: str) -> APIClient:
    api = APIClient()
    if caller == "intake":
        source = "generic" if "/webhooks/generic/" in url else "alertmanager"
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(f'matrix-{source}', source).token}")
    elif caller != "anonymous":
        account = factories.user(None if caller == "norole" else caller)
        api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=account).key}")
    return api


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize(
    ("name", "method", "template", "payload", "expected"), MATRIX, ids=[m[0] for m in MATRIX]
)
def test_matrix(
    monkeypatch: pytest.MonkeyPatch,
    caller: str,
    name: str,
    method: str,
    template: str,
    payload: Any,
    expected: dict[str, int],
) -> None:
    monkeypatch.setattr(health, "CHECKS", {"database": lambda: "ok"})
    proposal = factories.proposal()
    url = template.format(
        incident=proposal.investigation.incident_id,
        investigation=proposal.investigation_id,
        action=proposal.pk,
    )
    api = client(caller, url)
    if method == "get":
        response = api.get(url)
    else:
        response = api.post(url, data=body(payload or {}), content_type="application/json")
    assert response.status_code == expected[caller], (name, caller, response.content[:300])
    # The effect, not only the status: a comment exists exactly when one was accepted.
    assert Comment.objects.count() == int(response.status_code == 201), (name, caller)
    if response.status_code == 401:
        assert response.has_header("WWW-Authenticate")  # 401 always says how to authenticate
