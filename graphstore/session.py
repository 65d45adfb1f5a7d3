"""Managed transactions against the graph, with connection failures turned into `GraphUnavailable`.

Every read and write in `graphstore` goes through `write` / `read`, so there is one place that picks
the driver and database and one place that translates the driver's connection errors.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from neo4j import READ_ACCESS, Driver, ManagedTransaction, Transaction
from neo4j.exceptions import ConstraintError, ServiceUnavailable, SessionExpired

from graphstore.errors import GraphUnavailable

T = TypeVar("T")
Work = Callable[[ManagedTransaction], T]


def target(driver: Driver | None = None, database: str | None = None) -> tuple[Driver, str]:
    """The given driver/database, or the process-wide ones from the settings."""
    if driver is None or database is None:
        # Imported here so that callers passing both (the benchmark) need no Django settings.
        from graphstore.driver import database as default_database
        from graphstore.driver import get_driver

        driver = driver if driver is not None else get_driver()
        database = database if database is not None else default_database()
    return driver, database


# Two projections MERGE-ing the same shared node (a Service both incidents involve) at once: the loser
# hits the uniqueness constraint. Its retry finds the node and matches it, so a few attempts settle it;
# a constraint that keeps failing is a real error and surfaces.
MERGE_RACE_ATTEMPTS = 4


def _run(work: Work[T], driver: Driver | None, database: str | None, *, write: bool) -> T:
    drv, db = target(driver, database)
    attempt = 0
    while True:
        attempt += 1
        try:
            with drv.session(database=db) as session:
                return session.execute_write(work) if write else session.execute_read(work)
        except ConstraintError:
            if not write or attempt >= MERGE_RACE_ATTEMPTS:
                raise
            time.sleep(random.uniform(0.05, 0.2) * attempt)  # noqa: S311 (jitter, not crypto)
        except (ServiceUnavailable, SessionExpired) as exc:
            # The driver has already retried for max_transaction_retry_time; give up with one clear type.
            raise GraphUnavailable(f"graph server unavailable: {exc}") from exc


def write(work: Work[T], driver: Driver | None = None, database: str | None = None) -> T:
    """Run `work` in one managed write transaction (retried by the driver on transient errors)."""
    return _run(work, driver, database, write=True)


def read(work: Work[T], driver: Driver | None = None, database: str | None = None) -> T:
    """Run `work` in one managed read transaction."""
    return _run(work, driver, database, write=False)


def read_now(
    work: Callable[[Transaction], T], driver: Driver | None = None, database: str | None = None
) -> T:
    """Run `work` in one explicit read transaction, without the driver's retries.

    For a page that has a fallback: a managed transaction retries a refused connection for
    max_transaction_retry_time, which would hold the page that long; this gives up at once.
    """
    drv, db = target(driver, database)
    try:
        with (
            drv.session(database=db, default_access_mode=READ_ACCESS) as session,
            session.begin_transaction() as tx,
        ):
            return work(tx)
    except (ServiceUnavailable, SessionExpired) as exc:
        raise GraphUnavailable(f"graph server unavailable: {exc}") from exc
