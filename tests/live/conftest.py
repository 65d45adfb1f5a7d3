"""Fixtures for the live path against real servers: Prometheus and Alertmanager started per test on free
loopback ports with temporary data folders, and stopped (by their process) when the test ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rca.telemetry.replay.servers import Server, start_alertmanager, start_prometheus
from tests.conftest import free_port

StartPrometheus = Callable[..., Server]
StartAlertmanager = Callable[..., Server]


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """Every server a test started; each is stopped afterwards, even when the test failed."""
    started: list[Server] = []
    yield started
    for server in reversed(started):
        server.stop()


@pytest.fixture
def prometheus(servers: list[Server], tmp_path_factory: pytest.TempPathFactory) -> StartPrometheus:
    """`prometheus(config, tsdb, flags=None, port=None)` starts a Prometheus and returns it."""

    def start(
        config: Path, tsdb: Path, flags: dict[str, str] | None = None, port: int | None = None
    ) -> Server:
        server = start_prometheus(
            config, tsdb, port or free_port(), tmp_path_factory.mktemp("prometheus"), flags
        )
        servers.append(server)
        return server

    return start


@pytest.fixture
def alertmanager(servers: list[Server], tmp_path_factory: pytest.TempPathFactory) -> StartAlertmanager:
    """`alertmanager(config, port=None)` starts an Alertmanager and returns it."""

    def start(config: Path, port: int | None = None) -> Server:
        server = start_alertmanager(config, port or free_port(), tmp_path_factory.mktemp("alertmanager"))
        servers.append(server)
        return server

    return start
