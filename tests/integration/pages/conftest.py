"""Fixtures for the page tests: a signed-in Django test client per role, and finished investigations."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from tests.integration.api import factories


@pytest.fixture
def client_as(db: None) -> Callable[[str | None], Client]:
    """A test client signed in as a fresh user holding `role` (None: anonymous)."""

    def make(role: str | None) -> Client:
        client = Client()
        if role is not None:
            client.force_login(factories.user(role))
        return client

    return make


@pytest.fixture
def viewer(client_as: Callable[[str | None], Client]) -> Client:
    return client_as("viewer")


@pytest.fixture
def approver(client_as: Callable[[str | None], Client]) -> Client:
    return client_as("approver")
