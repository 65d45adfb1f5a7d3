"""Nothing waits forever (issue #23): the broker crashing with investigations handed to it, a worker's
pool process or main process killed mid-investigation, the scheduler killed. Each test ends with every
investigation finished exactly once. Real processes on loopback, supervised as `dev.py run` does, on
the embedded default (SQLite file, embedded Redis) and on PostgreSQL; every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import pytest
from celery import Celery

from tests.faults.stack import Stack, alert, payload

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
# Recorded public cases whose investigation runs for seconds, long enough to be killed mid-run.
LONG_CASES = {"child": ("nezha", "nezha/2023-01-29/01"), "main": ("nezha", "nezha/2023-01-29/02")}


def post_groups(stack: Stack, prefix: str, groups: int) -> None:
    for g in range(groups):
        status, _, response = stack.post(payload(f"{prefix}-{g}", [alert(hash(prefix) % 10**6 + g, g)]))
        assert status == 202, response.text


def finished_exactly_once(stack: Stack, prefix: str, expected: int, timeout: float = 120) -> None:
    def done() -> bool:
        rows = stack.investigations(prefix)
        return len(rows) == expected and all(status == "succeeded" for _, status, _ in rows)

    stack.watch_until(done, timeout, f"{expected} investigations of {prefix} finished")
    assert [times for _, _, times in stack.investigations(prefix)] == [1] * expected


def handed(stack: Stack, prefix: str) -> int:
    """How many investigations of the groups of `prefix` were handed to the broker."""
    return int(
        stack.rows(
            "SELECT COUNT(*) FROM incidents_investigation i "
            "JOIN incidents_incident n ON n.id = i.incident_id "
            f"WHERE i.dispatched_at IS NOT NULL AND n.group_key LIKE '%group=\"{prefix}%'"
        )[0][0]
    )


def running_claim(stack: Stack, prefix: str) -> str:
    """Wait until the one investigation of `prefix` runs; the worker's claim (host:pid:nonce)."""
    claims: list[str] = []

    def started() -> bool:
        claims[:] = [
            str(c)
            for (c,) in stack.rows(
                "SELECT i.claimed_by FROM incidents_investigation i JOIN incidents_incident n "
                f"ON n.id = i.incident_id WHERE i.status = 'running' AND n.group_key LIKE '{prefix}%'"
            )
        ]
        return bool(claims)

    stack.watch_until(started, 120, f"an investigation of {prefix} running")
    return claims[0]


def test_a_broker_crash_loses_no_investigation_handed_to_it(stack: Stack) -> None:
    before = stack.redispatched()
    # The worker is paused while the 8 are handed over, so the broker holds them when it dies (a fast
    # machine would otherwise finish them first and the crash would lose nothing to recover).
    worker = stack.kill("worker", signal.SIGSTOP)
    try:
        post_groups(stack, "broker", 8)  # 8 incidents: more than the 2 pool processes take at once
        stack.watch_until(lambda: handed(stack, "broker") == 8, 60, "8 investigations handed to the broker")
        stack.kill("redis")  # the broker keeps nothing on disk: what it held is gone
    finally:
        os.kill(worker, signal.SIGCONT)
    finished_exactly_once(stack, "broker", 8)
    assert stack.child("redis").restarts >= 1
    assert stack.redispatched() > before  # the lost ones were sent again by the sweep


def test_a_worker_that_stops_taking_messages_is_restarted(stack: Stack) -> None:
    # Celery's own control command leaves the worker alive and beating but deaf to its queue: the
    # state a broker reconnection has been seen to leave it in (rca.heartbeats.ConsumerWatch).
    restarts = stack.child("worker").restarts
    control = Celery(broker=stack.env["REDIS_URL"])
    replies = control.control.cancel_consumer(
        "celery", destination=[f"faults@{socket.gethostname()}"], reply=True, timeout=10
    )
    assert replies, "the worker did not answer the control command"
    post_groups(stack, "deaf", 2)
    finished_exactly_once(stack, "deaf", 2)
    assert stack.child("worker").restarts == restarts + 1


@pytest.mark.parametrize("which", ["child", "main"])
def test_a_worker_killed_mid_investigation_loses_nothing(stack: Stack, which: str) -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    dataset, case = LONG_CASES[which]
    before, restarts = stack.redispatched(), stack.child("worker").restarts
    # The worker is paused while the case is imported: on a busy machine the import command took
    # longer to exit than the investigation took to run, which was over before this test looked for it.
    worker = stack.kill("worker", signal.SIGSTOP)
    try:
        stack.import_case(dataset, case, DATA)
    finally:
        os.kill(worker, signal.SIGCONT)
    claim = running_claim(stack, dataset)
    if which == "child":
        os.kill(int(claim.split(":")[1]), signal.SIGKILL)  # the pool process running it
    else:
        stack.kill("worker")  # the main process; the supervisor ends its pool and restarts it
    finished_exactly_once(stack, f"{dataset}:{case}", 1)
    if which == "main":
        assert stack.child("worker").restarts == restarts + 1
        # Its message stays unacknowledged until the visibility timeout (15 min): only the sweep,
        # seeing the run's heartbeat stop, could hand it out again this soon.
        assert stack.redispatched() > before
    # (A killed pool process's task is redelivered at once; that copy waits for the dead run's
    # heartbeat to go stale, then runs it, unless the sweep got there first: either way, once.)


def test_a_killed_scheduler_is_restarted_and_sweeps_again(stack: Stack) -> None:
    restarts = stack.child("scheduler").restarts
    old = {h["pid"] for h in stack.heartbeats("scheduler")}
    stack.kill("scheduler")
    stack.watch_until(
        lambda: stack.child("scheduler").restarts == restarts + 1, 30, "the scheduler restarted"
    )
    stack.watch_until(
        lambda: any(h["pid"] not in old for h in stack.heartbeats("scheduler")),
        60,
        "the new scheduler's heartbeat",
    )
    # Only the restarted scheduler's sweep can recover these: the broker loses them at once. The worker
    # is paused while they are handed over, so the broker holds them when it dies (otherwise the worker
    # may finish all six first and leave the sweep nothing to recover).
    before = stack.redispatched()
    worker = stack.kill("worker", signal.SIGSTOP)
    try:
        post_groups(stack, "sched", 6)
        stack.watch_until(lambda: handed(stack, "sched") == 6, 60, "6 investigations handed to the broker")
        stack.kill("redis")
    finally:
        os.kill(worker, signal.SIGCONT)
    finished_exactly_once(stack, "sched", 6)
    assert stack.redispatched() > before
