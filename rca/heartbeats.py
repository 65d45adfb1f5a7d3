"""Heartbeats of the supervised processes: each worker and the scheduler say every few seconds that
they are alive, as a Redis key that expires; `/healthz` reads them and names a missing one.

A worker beats once per queue it consumes (role `worker` for the investigation queue, `memory-worker`
for the incident-memory queue); beat's scheduler beats as `scheduler`. A key lives for the stale
period (ROOTLINE_HEARTBEAT_STALE_S), so a process that died, or hangs, disappears on its own.

A worker alive but no longer taking messages would beat on while its queues fill: the Redis transport
has been seen to reconnect after a broker restart without resuming its fetches (celery#8030, #8091,
#10205). So a worker's heartbeat also watches its consumer (`ConsumerWatch`): when messages have waited
in its queues for DEAF_AFTER_STALE_PERIODS stale periods while it had a slot free and received nothing,
it stops beating and stops its process, for the supervisor to start a fresh one.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis
from django.conf import settings

log = logging.getLogger(__name__)

PREFIX = "rootline:heartbeat"
# Roles by the Celery queue a worker consumes (see CELERY_TASK_ROUTES).
QUEUE_ROLES = {"celery": "worker", "memory": "memory-worker"}
BEATS_PER_STALE_PERIOD = 4  # a process beats this many times per stale period: one slow write is no death
# A worker with a free slot takes a waiting message within one broker round trip (milliseconds); four
# stale periods of waiting (2 min by default) leave room for a starved machine's pauses and a broker
# reconnection's retries before a worker is called deaf.
DEAF_AFTER_STALE_PERIODS = 4
EX_SOFTWARE = 70  # sysexits.h: the exit status of a worker that had to end itself


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


@dataclass
class ConsumerWatch:
    """Whether a worker still takes messages from its queues: `deaf()` holds once messages have waited
    in them for `window_s` while the worker had a slot free (`busy()` below `slots`) and received
    nothing (`received()` is called on each message the worker takes)."""

    queues: tuple[str, ...]
    slots: int
    busy: Callable[[], int]  # messages the worker holds (running or reserved)
    window_s: float
    paused_s: float  # a gap this long between two looks means this process itself was stopped
    last_received: float = field(default_factory=time.monotonic)
    waiting_since: float | None = None
    looked_at: float | None = None

    def received(self) -> None:
        """A message reached the worker."""
        self.last_received = time.monotonic()

    def deaf(self, conn: redis.Redis, now: float) -> bool:
        """Read the queues' lengths; whether the consumer has been deaf for the window. A broker that
        cannot be read proves nothing, nor does a wait this process slept through (stopped, or starved
        of CPU): either way the wait starts over."""
        slept = self.looked_at is not None and now - self.looked_at >= self.paused_s
        self.looked_at = now
        try:
            waiting = sum(int(conn.llen(queue)) for queue in self.queues)
        except redis.RedisError:
            waiting = 0
        stuck = waiting > 0 and self.busy() < self.slots  # messages wait while a slot is free
        if not stuck or slept:
            self.waiting_since = None
        if not stuck:
            return False
        if self.waiting_since is None:
            self.waiting_since = now
        return now - max(self.waiting_since, self.last_received) >= self.window_s


def end_process(grace_s: float) -> None:
    """Stop this process as SIGTERM does (Celery's warm shutdown), or at once if it is still running
    `grace_s` later (a hung consumer may never finish a warm shutdown)."""
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(grace_s)
    os._exit(EX_SOFTWARE)


class Heartbeat(threading.Thread):
    """A daemon thread beating for `roles` under `name` until the process exits or `stop()`; with a
    `watch`, only while the worker's consumer takes messages (then `on_deaf` ends the process)."""

    def __init__(
        self,
        name: str,
        roles: tuple[str, ...],
        watch: ConsumerWatch | None = None,
        on_deaf: Callable[[float], None] = end_process,
    ) -> None:
        super().__init__(name=f"heartbeat-{name}", daemon=True)
        self.process_name = name
        self.roles = roles
        self.watch = watch
        self.on_deaf = on_deaf
        self._stop_event = threading.Event()

    def run(self) -> None:
        """Beat every stale period / BEATS_PER_STALE_PERIOD; a failed write is logged once per outage."""
        every = settings.ROOTLINE_RELIABILITY.heartbeat_stale_s / BEATS_PER_STALE_PERIOD
        conn = client(timeout_s=min(every, 2.0))
        failing = False
        while not self._stop_event.is_set():
            if self.watch is not None and self.watch.deaf(conn, time.monotonic()):
                log.error(
                    "%s has taken no message for %.0f s while %s held some and a slot was free: "
                    "its consumer is deaf; stopping the process so that it is started afresh",
                    self.process_name,
                    self.watch.window_s,
                    ", ".join(self.watch.queues),
                )
                self.on_deaf(self.watch.window_s)
                return
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


def start(roles: tuple[str, ...], name: str | None = None, watch: ConsumerWatch | None = None) -> Heartbeat:
    """Start beating for `roles` as `name` (default: host name and process id), watching the
    consumer when `watch` is given."""
    thread = Heartbeat(name or f"{socket.gethostname()}:{os.getpid()}", roles, watch)
    thread.start()
    return thread


def watch_consumer(queues: tuple[str, ...], slots: int, busy: Callable[[], int]) -> ConsumerWatch:
    """A `ConsumerWatch` of a worker taking `queues` with `slots` pool processes, its window
    DEAF_AFTER_STALE_PERIODS stale periods."""
    stale = settings.ROOTLINE_RELIABILITY.heartbeat_stale_s
    return ConsumerWatch(queues, slots, busy, window_s=DEAF_AFTER_STALE_PERIODS * stale, paused_s=stale)
