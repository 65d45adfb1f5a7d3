"""The intake outbox on real processes: an alert arriving while Redis is down is stored, and its
investigation is sent and run once the broker is back."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from rca.incidents.models import Alert, Incident, Investigation
from tests.conftest import REPO_ROOT, free_port
from tests.integration.pipeline.worker import start_worker, stop, wait_for, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True), pytest.mark.slow]
DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
CASE = ("rcd-sockshop", "rcd/carts-mem/1")


class Broker:
    """A redis-server of this test's own, to stop and start again on the same port."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--dir",
                str(self.folder),
            ],
            stdout=subprocess.DEVNULL,
        )
        wait_for(self._answers, 20, "redis-server to start")

    def _answers(self) -> bool:
        try:
            return bool(redis.Redis(port=self.port, socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            self.proc = None


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    own = Broker(tmp_path)
    yield own
    own.stop()


def test_an_alert_during_a_broker_outage_is_investigated_when_it_returns(
    tmp_path: Path, broker: Broker
) -> None:
    env = worker_env(REDIS_URL=broker.url)
    started = time.monotonic()
    intake = subprocess.run(
        [sys.executable, "manage.py", "import_case", *CASE, "--data", str(DATA)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    took = time.monotonic() - started
    assert intake.returncode == 0, intake.stderr[-2000:]
    assert "the outbox will send it" in intake.stderr
    incident = Incident.objects.get(recorded_case__case_id=CASE[1])
    assert Alert.objects.filter(incident=incident).count() == 1  # the alert is stored
    investigation = incident.investigations.get()
    assert investigation.status == "queued"
    assert investigation.dispatched_at is None  # not lost: waiting in the outbox
    assert took < 30  # the intake did not hang on the dead broker

    broker.start()
    worker = start_worker(tmp_path / "worker.log", "outbox", env=env)
    try:
        wait_for(
            lambda: Investigation.objects.filter(pk=investigation.pk, status="succeeded").exists(),
            120,
            "the outbox to send the investigation and the worker to run it",
        )
    finally:
        stop(worker)
    investigation.refresh_from_db()
    assert investigation.dispatched_at is not None
    assert incident.investigations.count() == 1
