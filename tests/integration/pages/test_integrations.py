"""The integrations page: every system of the registry, configured or not, reachable or not (a TCP
connection within the health deadline, nothing sent), with the variables that set it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from django.test import Client

from rca.integrations import registry

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on which something accepts connections."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens once it is closed


def test_each_system_is_listed_with_its_state_and_variables(
    settings: Any, viewer: Client, listening: int
) -> None:
    settings.ROOTLINE_LIVE_TELEMETRY = {
        "prometheus": {"url": f"http://127.0.0.1:{listening}"},
        "loki": {"url": f"http://127.0.0.1:{_closed_port()}"},
    }
    settings.ROOTLINE_ACTIONS = replace(settings.ROOTLINE_ACTIONS, github=None, channels=(), dry_run=True)
    page = viewer.get("/integrations/")
    assert page.status_code == 200
    rows = {row.name: row for row in page.context["systems"]}
    assert list(rows) == [s.name for s in registry.SYSTEMS]
    assert rows["prometheus"].configured
    assert rows["prometheus"].reach is not None
    assert rows["prometheus"].reach.ok
    assert rows["loki"].configured
    assert rows["loki"].reach is not None
    assert not rows["loki"].reach.ok
    assert not rows["tempo"].configured
    assert rows["tempo"].reach is None
    html = page.content.decode()
    for system in registry.SYSTEMS:
        for variable in system.config.env_names():
            assert f"<code>{variable}</code>" in html, variable
    executors = {e.tier: e for e in page.context["executors"]}
    assert not executors["pull_request"].ready
    assert "GITHUB_REPOSITORY" in executors["pull_request"].through
    assert executors["notify"].detail.startswith("dry run")
