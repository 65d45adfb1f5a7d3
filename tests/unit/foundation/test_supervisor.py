"""dev.py's Supervisor: a process that dies is restarted after a doubling backoff; stop() ends all."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from tests.faults.stack import launcher


@pytest.fixture
def supervisor():  # type: ignore[no-untyped-def]
    dev = launcher()
    sup = dev.Supervisor()
    sup.BACKOFF_FIRST_S, sup.BACKOFF_MAX_S, sup.STEADY_S = 0.2, 0.4, 60.0
    yield sup
    sup.stop(timeout=5)


def test_a_dying_process_is_restarted_with_a_doubling_backoff(supervisor) -> None:  # type: ignore[no-untyped-def]
    child = supervisor.start("crasher", [sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ))
    waits = []
    deadline = time.monotonic() + 20
    while child.restarts < 3 and time.monotonic() < deadline:
        supervisor.check()
        if child.restart_at is not None and len(waits) == child.restarts:  # a death, its wait chosen
            waits.append(child.backoff)
        time.sleep(0.02)
    assert child.restarts == 3
    assert waits[:3] == [0.2, 0.4, 0.4]  # doubled, then capped


def test_stop_ends_every_process(supervisor) -> None:  # type: ignore[no-untyped-def]
    sleepers = [
        supervisor.start(
            f"sleeper-{n}", [sys.executable, "-c", "import time; time.sleep(60)"], dict(os.environ)
        )
        for n in range(2)
    ]
    supervisor.check()
    assert all(s.proc.poll() is None for s in sleepers)
    supervisor.stop(timeout=5)
    assert all(s.proc.poll() is not None for s in sleepers)


def test_kill_cuts_a_stop_short_and_leaves_nothing_running(supervisor) -> None:  # type: ignore[no-untyped-def]
    # A process that ignores SIGTERM would hold stop() for its whole timeout; a second Ctrl-C calls kill().
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    child = supervisor.start("stubborn", [sys.executable, "-c", stubborn], dict(os.environ))
    time.sleep(0.5)  # its handler is installed
    timer = threading.Timer(1.0, supervisor.kill)
    timer.start()
    started = time.monotonic()
    supervisor.stop(timeout=30)
    timer.join()
    assert child.proc.poll() is not None
    assert time.monotonic() - started < 15  # far short of the 30 s the stop would have waited
