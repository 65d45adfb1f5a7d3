"""Shared fixtures: real services for integration tests.

PostgreSQL and Redis are the machine's own (dev.py test points DATABASE_URL and REDIS_URL at them);
ArcadeDB's Bolt server is started here once per session; Qdrant runs in local mode in a temp folder.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

REPO_ROOT = Path(__file__).resolve().parent.parent

# No per-example time limit: on a shared 2-core machine an example can take longer than Hypothesis's
# 200 ms default for reasons that are not the code's; speed is measured in bench/, never in tests.
hypothesis_settings.register_profile("rootline", deadline=None)
hypothesis_settings.load_profile("rootline")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_arcade(root: Path):  # type: ignore[no-untyped-def]
    """Start an ArcadeDB Bolt server under `root` on free ports (the caller stops it)."""
    from django.conf import settings

    from graphstore.launcher import ArcadeServer

    server = ArcadeServer(
        root=root,
        bolt_port=free_port(),
        http_port=free_port(),
        password=settings.ROOTLINE_GRAPH.password,
        database=settings.ROOTLINE_GRAPH.database,
        heap="512m",
    )
    server.start()
    return server


def point_graph_at(server) -> None:  # type: ignore[no-untyped-def]
    """Make the app's driver talk to `server`."""
    from django.conf import settings

    from graphstore.driver import close_driver

    settings.ROOTLINE_GRAPH = replace(settings.ROOTLINE_GRAPH, uri=server.uri)
    close_driver()


@pytest.fixture(scope="session")
def graph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One ArcadeDB server over Bolt for the whole session; the app's driver points at it."""
    server = start_arcade(tmp_path_factory.mktemp("arcadedb"))
    point_graph_at(server)
    yield server
    from graphstore.driver import close_driver

    close_driver()
    server.stop()


@pytest.fixture
def graph(graph_server: object):  # type: ignore[no-untyped-def]
    """The app's driver on an empty graph that has the schema (graph tests and the explorer's pages)."""
    from graphstore.driver import database, get_driver
    from graphstore.schema import ensure_schema

    driver = get_driver()
    driver.execute_query("MATCH (n) DETACH DELETE n", database_=database())
    ensure_schema(driver, database())
    return driver


@pytest.fixture(scope="session", autouse=True)
def _static_root() -> None:
    """WhiteNoise expects STATIC_ROOT to exist even when it serves from the finders."""
    from django.conf import settings

    settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="session", autouse=True)
def _qdrant_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Qdrant local mode in a session temp folder, never the developer's var/."""
    from django.conf import settings

    from rca.memory.store import close_client

    settings.ROOTLINE_QDRANT_URL = None
    settings.ROOTLINE_QDRANT_PATH = tmp_path_factory.mktemp("qdrant")
    close_client()
    yield
    close_client()
