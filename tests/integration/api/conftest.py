"""Fixtures for the API tests: a client per role, intake tokens, payloads."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from rca.incidents.tokens import IssuedToken, issue_token
from tests.integration.api import factories

ROLES = ("viewer", "responder", "approver")


@pytest.fixture
def client_for(db: None) -> Callable[[str | None], APIClient]:
    """An API client authenticated with a DRF token as a fresh user holding `role` (None: anonymous)."""

    def make(role: str | None) -> APIClient:
        client = APIClient()
        if role is not None:
            account = factories.user(None if role == "norole" else role)
            client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=account).key}")
        return client

    return make


@pytest.fixture
def viewer(client_for: Callable[[str | None], APIClient]) -> APIClient:
    return client_for("viewer")


@pytest.fixture
def responder(client_for: Callable[[str | None], APIClient]) -> APIClient:
    return client_for("responder")


@pytest.fixture
def approver(client_for: Callable[[str | None], APIClient]) -> APIClient:
    return client_for("approver")


@pytest.fixture
def am_token(db: None) -> IssuedToken:
    """An Alertmanager intake token that may also sign bodies."""
    return issue_token("alertmanager-test", "alertmanager", with_hmac=True)


@pytest.fixture
def generic_token(db: None) -> IssuedToken:
    """A bearer-only generic intake token."""
    return issue_token("generic-test", "generic")
