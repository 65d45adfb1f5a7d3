"""One supervised stack per database kind for the whole package (starting one takes ~15 s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults.stack import KINDS, Stack, graph_env, running

# Deadlines short enough for a test (the defaults: 30 s, 600 s, 30 s, 5 s, 3).
SETTINGS = {
    "ROOTLINE_HEARTBEAT_STALE_S": "3",
    "ROOTLINE_REDISPATCH_AFTER_S": "3",
    "ROOTLINE_SWEEP_EVERY_S": "1",
    "ROOTLINE_SQLITE_BUSY_TIMEOUT_S": "0.5",
    "ROOTLINE_INTAKE_LOCK_RETRIES": "1",
}


@pytest.fixture(scope="package", params=KINDS)
def stack(request: pytest.FixtureRequest, graph_server: object) -> Iterator[Stack]:
    """The embedded default (SQLite file, embedded Redis), then PostgreSQL."""
    with running(request.param, workers=2, graph=graph_env(graph_server), **SETTINGS) as up:
        yield up
