"""Graph tests run against the session's ArcadeDB (over Bolt) and the test PostgreSQL database."""

from __future__ import annotations

import pytest
from neo4j import Driver

from graphstore.driver import database, get_driver
from graphstore.schema import ensure_schema


@pytest.fixture
def graph(graph_server: object) -> Driver:
    """The app's driver on an empty graph that has the schema."""
    driver = get_driver()
    driver.execute_query("MATCH (n) DETACH DELETE n", database_=database())
    ensure_schema(driver, database())
    return driver
