"""Constraints and indexes of the explanatory graph, created idempotently.

Neo4j 5 syntax that ArcadeDB's Bolt plugin also accepts (checked against a live server): every
statement carries `IF NOT EXISTS`, so running `ensure_schema` again is a no-op. Composite property
uniqueness (Service, Change) is available in Neo4j 5 Community; NODE KEY constraints are not, so we
do not use them.
"""

from __future__ import annotations

import weakref

from neo4j import Driver, ManagedTransaction

from graphstore import session

# Node keys: what every MERGE in graphstore.projection matches on.
CONSTRAINTS: tuple[str, ...] = (
    "CREATE CONSTRAINT service_key IF NOT EXISTS FOR (n:Service) REQUIRE (n.namespace, n.name) IS UNIQUE",
    "CREATE CONSTRAINT incident_key IF NOT EXISTS FOR (n:Incident) REQUIRE n.key IS UNIQUE",
    "CREATE CONSTRAINT hypothesis_key IF NOT EXISTS FOR (n:Hypothesis) REQUIRE n.key IS UNIQUE",
    "CREATE CONSTRAINT evidence_key IF NOT EXISTS FOR (n:Evidence) REQUIRE n.key IS UNIQUE",
    "CREATE CONSTRAINT change_key IF NOT EXISTS FOR (n:Change) REQUIRE (n.entity, n.ref) IS UNIQUE",
)

# Lookups by incident: replacing a re-investigated incident's projection and reading its subgraph.
INDEXES: tuple[str, ...] = (
    "CREATE INDEX hypothesis_incident IF NOT EXISTS FOR (n:Hypothesis) ON (n.incident)",
    "CREATE INDEX evidence_incident IF NOT EXISTS FOR (n:Evidence) ON (n.incident)",
    "CREATE INDEX incident_id IF NOT EXISTS FOR (n:Incident) ON (n.id)",
    "CREATE INDEX propagated_incident IF NOT EXISTS FOR ()-[r:PROPAGATED_TO]-() ON (r.incident)",
)

STATEMENTS: tuple[str, ...] = CONSTRAINTS + INDEXES

# Per driver, the databases known to have the schema in this process (weak: a dropped driver is forgotten).
_ensured: weakref.WeakKeyDictionary[Driver, set[str]] = weakref.WeakKeyDictionary()


def ensure_schema(driver: Driver | None = None, database: str | None = None, *, force: bool = False) -> int:
    """Create any missing constraint or index; returns how many were added (0 when all exist).

    Remembered per driver, so callers on a hot path (the projection task) can call it every time.
    """
    driver, database = session.target(driver, database)
    known = _ensured.setdefault(driver, set())
    if database in known and not force:
        return 0

    def work(tx: ManagedTransaction) -> int:
        added = 0
        for statement in STATEMENTS:
            counters = tx.run(statement).consume().counters
            added += counters.constraints_added + counters.indexes_added
        return added

    # Schema commands run in their own transaction, never mixed with data writes (Neo4j requires it).
    added = session.write(work, driver, database)
    known.add(database)
    return added
