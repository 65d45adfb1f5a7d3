"""Heartbeats of the supervised processes: each worker and the scheduler say every few seconds that
they are alive, as a Redis key that expires; `/healthz` reads them and names a missing one.

A worker beats once per queue it consumes (role `worker` for the investigation queue, `memory-worker`
for the incident-memory queue); beat's scheduler beats as `scheduler`. A key lives for the stale
period (ROOTLINE_HEARTBEAT_STALE_S), so a process that died, or hangs, disappears on its own.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import Any

import redis
from django.conf import settings

log = logging.getLogger(__name__)

PREFIX = "rootline:heartbeat"
# Roles by the Celery queue a worker consumes (see CELERY_TASK_ROUTES).
QUEUE_ROLES = {"celery": "worker", "memory": "memory-worker"}
BEATS_PER_STALE_PERIOD = 4  # a process beats this many times per stale period: one slow write is no death


def client(timeout_s: float) -> redis.Redis:
    """A Redis client on the broker with short timeouts (a health check must not hang on it)."""
    return redis.Redis.from_url(
        settings.CELERY_BROKER_URL, socket_connect_timeout=timeout_s, socket_timeout=timeout_s
    )


def expected_roles() -> tuple[str, ...]:
    """The roles /healthz requires a live heartbeat of: ROOTLINE_HEALTH_PROCESSES, or by default the
    investigation worker and the scheduler, plus the memory worker when memory is reached through it;
    none in eager mode (tasks run in the web process)."""
    configured = settings.ROOTLINE_RELIABILITY.health_processes
    if configured is not None:
        return tuple(configured)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return ()
    memory = ("memory-worker",) if settings.ROOTLINE_MEMORY_VIA_WORKER else ()
    return ("worker", *memory, "scheduler")


def _key(role: str, name: str) -> str:
    return f"{PREFIX}:{role}:{name}"


def beat(conn: redis.Redis, role: str, name: str) -> None:
    """Record that process `name` in `role` is alive now (the key expires after the stale period)."""
    stale = settings.ROOTLINE_RELIABILITY.heartbeat_stale_s
    value = json.dumps({"name": name, "pid": os.getpid(), "at": time.time()})
    conn.set(_key(role, name), value, px=int(stale * 1000))


def live(conn: redis.Redis, role: str) -> list[dict[str, Any]]:
    """The processes of `role` whose heartbeat has not expired, each {name, pid, at}."""
    keys = sorted(conn.scan_iter(match=_key(role, "*"), count=100))
    values = conn.mget(keys) if keys else []
    return [json.loads(v) for v in values if v]


class Heartbeat(threading.Thread):
    """A daemon thread beating for `roles` under `name` until the process exits or `stop()`."""

    def __init__(self, name: str, roles: tuple[str, ...]) -> None:
        super().__init__(name=f"heartbeat-{name}", daemon=True)
        self.process_name = name
        self.roles = roles
        self._stop_event = threading.Event()

    def run(self) -> None:
        """Beat every stale period / BEATS_PER_STALE_PERIOD; a failed write is logged once per outage."""
        every = settings.ROOTLINE_RELIABILITY.heartbeat_stale_s / BEATS_PER_STALE_PERIOD
        conn = client(timeout_s=min(every, 2.0))
        failing = False
        while not self._stop_event.is_set():
            try:
                for role in self.roles:
                    beat(conn, role, self.process_name)
                if failing:
                    log.info("heartbeat of %s written again", self.process_name)
                failing = False
            except redis.RedisError as exc:
                if not failing:
                    log.warning(
                        "heartbeat of %s not written (broker unreachable): %s", self.process_name, exc
                    )
                failing = True
            self._stop_event.wait(every)

    def stop(self) -> None:
        """End the loop (tests)."""
        self._stop_event.set()


def start(roles: tuple[str, ...], name: str | None = None) -> Heartbeat:
    """Start beating for `roles` as `name` (default: host name and process id)."""
    thread = Heartbeat(name or f"{socket.gethostname()}:{os.getpid()}", roles)
    thread.start()
    return thread
