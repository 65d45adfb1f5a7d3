"""Incident memory reached through the worker that owns it.

Qdrant's local mode lets one process open a store's folder at a time. With `ROOTLINE_MEMORY_VIA_WORKER`
set (what `dev.py run` does), that process is the Celery worker consuming the `memory` queue, and every
other process (the web server, the investigation workers) sends its searches and recalls there and waits
for the answer. With a Qdrant server every process talks to it directly and this module is not used.

Requests expire when their caller stops waiting, so a memory worker that was down does not come back to
a backlog of searches nobody reads. Any failure to get an answer is `MemoryUnavailable`, the same error a
direct call raises, so callers degrade the same way (no recall, a note on the page).

The requests are sent by task name through a Celery client of this module's own, configured from the same
Django `CELERY_*` settings as the worker's application (`celery_app`): the domain never imports the
application that runs it (an import-linter contract), and a client needs no task code, only the names.
Celery's `current_app` would not do: it is per thread, and falls back to an unconfigured default app in
any process or thread where the worker's application was never imported.
"""

from __future__ import annotations

import functools
from typing import Any

from celery import Celery

from rca.memory.errors import MemoryUnavailable

QUEUE = "memory"
SEARCH_TASK = "rootline.memory_search"
RECALL_TASK = "rootline.memory_recall"
STATUS_TASK = "rootline.memory_status"


@functools.cache
def client() -> Celery:
    """The process's Celery client for the memory worker's tasks (made on first use, from settings)."""
    app = Celery("rootline-memory-client", set_as_current=False)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    return app


def call(task: str, *args: Any) -> Any:
    """Run `task` on the memory worker and return its `result`; MemoryUnavailable when it can't.

    The worker's tasks answer `{"result": ...}` or `{"unavailable": reason}` (the store itself failed).
    """
    from celery.exceptions import TimeoutError as CeleryTimeout
    from django.conf import settings
    from kombu.exceptions import OperationalError
    from redis.exceptions import RedisError

    timeout = settings.ROOTLINE_MEMORY_TIMEOUT_S
    try:
        pending = client().send_task(task, args=args, queue=QUEUE, expires=timeout, retry=False)
    except (OperationalError, RedisError, RuntimeError) as exc:  # the broker / result store is down
        raise MemoryUnavailable(f"incident memory can't be asked: {exc}") from exc
    try:
        # Investigation workers wait on the memory worker, a different pool, so this cannot deadlock.
        answer = pending.get(timeout=timeout, disable_sync_subtasks=False)
    except CeleryTimeout as exc:
        raise MemoryUnavailable(
            f"incident memory did not answer within {timeout}s: is a worker consuming the '{QUEUE}' "
            "queue running?"
        ) from exc
    except (OperationalError, RedisError, RuntimeError) as exc:
        raise MemoryUnavailable(f"incident memory's answer was lost: {exc}") from exc
    finally:
        pending.forget()
    if not isinstance(answer, dict) or ("result" not in answer and "unavailable" not in answer):
        raise MemoryUnavailable(f"incident memory gave an unexpected answer: {str(answer)[:200]}")
    if "unavailable" in answer:
        raise MemoryUnavailable(str(answer["unavailable"]))
    return answer["result"]
