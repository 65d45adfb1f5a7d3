"""The Celery app of a worker under fault tests: the real app and tasks, with two test controls.

- ROOTLINE_TEST_PARK (task names, comma-separated): follow-up tasks this worker sends go to the
  PARKED queue, which no worker consumes, so a graph server or store this test does not run is never
  waited on; the test purges the queue (`purge_parked`).
- ROOTLINE_TEST_PAUSE_DIR: the worker pauses once, just before it stores an investigation's result:
  it creates `reached` there and waits until the test creates `go`. The test can so restart a server
  exactly between an investigation's work and its write, whatever the machine's speed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from celery.signals import task_prerun

from celery_app.app import app

__all__ = ["PARKED", "app", "purge_parked"]

PARKED = "faults-parked"

app.conf.task_routes = {
    **(app.conf.task_routes or {}),
    **{name: {"queue": PARKED} for name in os.environ.get("ROOTLINE_TEST_PARK", "").split(",") if name},
}


def purge_parked() -> None:
    """Drop whatever a worker parked (call from the test process)."""
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(PARKED)


@task_prerun.connect
def _pause_before_storing(**_: Any) -> None:
    """Wrap `store_result` once Django is set up (the first task); only its first call pauses."""
    gate = os.environ.get("ROOTLINE_TEST_PAUSE_DIR")
    from rca.incidents import investigations

    store = investigations.store_result
    if not gate or getattr(store, "paused", False):
        return

    def paused(*args: Any, **kwargs: Any) -> None:
        if not (Path(gate) / "reached").exists():
            (Path(gate) / "reached").touch()
            while not (Path(gate) / "go").exists():
                time.sleep(0.02)
        store(*args, **kwargs)

    paused.paused = True  # type: ignore[attr-defined]
    investigations.store_result = paused  # type: ignore[assignment]
