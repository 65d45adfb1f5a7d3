"""A real Celery worker process for pipeline tests, on the test database and the test Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from django.db import connection

REPO = Path(__file__).resolve().parents[3]


def worker_env(visibility_s: int = 3, **extra: str) -> dict[str, str]:
    """The environment of a worker that sees what the test process sees (database, graph server)."""
    from django.conf import settings

    env = dict(os.environ)
    db = connection.settings_dict
    env["DATABASE_URL"] = (
        f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    )
    env["ROOTLINE_TASK_VISIBILITY_S"] = str(visibility_s)
    graph = settings.ROOTLINE_GRAPH
    env.update(NEO4J_URI=graph.uri, NEO4J_USER=graph.user, NEO4J_PASSWORD=graph.password)
    env["NEO4J_DATABASE"] = graph.database
    env.update(extra)
    return env


def start_worker(
    log: Path,
    name: str,
    queues: str = "celery",
    env: dict[str, str] | None = None,
    app: str = "celery_app",
) -> subprocess.Popen[bytes]:
    """Start `celery worker` of `app` on `queues` (solo pool, one task at a time) logging to `log`."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            app,
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            f"--queues={queues}",
            "-n",
            f"{name}@%h",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=REPO,
        env=env or worker_env(),
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Stop a worker (SIGKILL simulates a crash) and reap it."""
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def wait_for(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.02) -> None:
    """Poll until `condition()` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
