"""Fixtures of the integration tests: recorded sleeps and clients that use them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rca.integrations.http import Credentials, HttpClient, RetryPolicy

from .recorded import Sleeps


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make_client(sleeps: Sleeps) -> Iterator[Callable[..., HttpClient]]:
    """An HttpClient whose sleeps are recorded and whose jitter is fixed (rng -> 1.0: the full delay)."""
    made: list[HttpClient] = []

    def make(backend: str, url: str, **kwargs: Any) -> HttpClient:
        kwargs.setdefault("retry", RetryPolicy())
        kwargs.setdefault("credentials", Credentials(token="s3cret-token-value"))
        client = HttpClient(backend, url, sleep=sleeps, rng=lambda: 1.0, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
