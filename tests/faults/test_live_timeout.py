"""A live telemetry backend that hangs: its tool results are inconclusive, and the gate still decides.

An alert arrives through the Alertmanager intake for a service whose telemetry lives in live backends
(no recorded case), served by a real HTTP server process (`telemetry_server`). In the first test Loki
hangs past the client's timeout while Prometheus answers: every log examination is a failed,
inconclusive result, never support, and the gate decides on the metrics. In the second both hang: the
investigation still completes (seeding does without them) and, with nothing supporting anything, the
gate exits "no confident root cause" at the lowest tier.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from celery_app.app import app
from rca.incidents.intake import ingest_alertmanager
from rca.incidents.investigations import run_investigation
from rca.incidents.models import Evidence, Incident, Investigation
from tests.conftest import REPO_ROOT, free_port
from tests.integration.pipeline.worker import stop, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True), pytest.mark.slow]

TIMEOUT_S = 0.4  # the client's per-request timeout; the server hangs far longer


FIRED = time.time() - 60  # the alert fired a minute ago; carts' CPU saturated two minutes before
HANGING = "http://127.0.0.1:{port}/hang"  # a path prefix the server never answers in time


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """The telemetry server process: its port and its request log."""
    port = free_port()
    log = tmp_path / "requests.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.telemetry_server", str(port), str(FIRED - 120)],
        cwd=REPO_ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for(lambda: "ready" in log.read_text(), 20, "the telemetry server to listen")
        yield port, log
    finally:
        stop(proc)


@pytest.fixture
def live_telemetry() -> Iterator[None]:
    """Restore the live telemetry settings a test changes."""
    saved = settings.ROOTLINE_LIVE_TELEMETRY
    yield
    settings.ROOTLINE_LIVE_TELEMETRY = saved


def _configure(prometheus: str, loki: str) -> None:
    """Live Prometheus and Loki at these URLs, a static topology, short timeouts, few retries."""
    settings.ROOTLINE_LIVE_TELEMETRY = {
        "prometheus": {"url": prometheus, "timeout": TIMEOUT_S},
        "loki": {"url": loki, "timeout": TIMEOUT_S},
        "retry": {"max_attempts": 2, "base_delay": 0.05, "max_delay": 0.1, "max_total": 2.0},
        "topology_edges": [["frontend", "carts"], ["carts", "carts-db"], ["frontend", "catalogue"]],
    }


def _alert() -> dict[str, object]:
    """An Alertmanager v4 payload: one firing latency alert on `frontend`, fired a minute ago."""
    fired = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(FIRED))
    return {
        "version": "4",
        "groupKey": '{}:{alertname="HighLatency"}',
        "status": "firing",
        "receiver": "rootline",
        "groupLabels": {"alertname": "HighLatency"},
        "commonLabels": {"alertname": "HighLatency", "severity": "critical"},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "HighLatency", "service": "frontend", "severity": "critical"},
                "annotations": {"summary": "p99 latency above 2 s"},
                "startsAt": fired,
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prometheus:9090/graph",
                "fingerprint": "5f1e0c8a2b7d4e61",
            }
        ],
    }


def _investigate() -> tuple[Incident, Investigation, list[Evidence]]:
    """Take the alert in, run its investigation through the engine here, and read back what was stored."""
    result = ingest_alertmanager(_alert())
    app.control.purge()  # the investigation runs in this process, not in a worker
    incident = Incident.objects.get(pk=result.incidents_created[0])
    assert incident.recorded_case is None  # live telemetry, not a recorded case
    investigation = run_investigation(incident.investigations.get().pk)
    investigation.refresh_from_db()
    incident.refresh_from_db()
    assert investigation.status == Investigation.Status.SUCCEEDED
    assert investigation.proposals.count() == 1
    assert incident.status == Incident.Status.OPEN
    return incident, investigation, list(Evidence.objects.filter(hypothesis__investigation=investigation))


def test_a_hanging_log_backend_gives_inconclusive_evidence_and_the_gate_decides_on_the_rest(
    backends: tuple[int, Path], live_telemetry: None
) -> None:
    port, requests = backends
    _configure(prometheus=f"http://127.0.0.1:{port}", loki=HANGING.format(port=port))
    _, investigation, evidence = _investigate()
    asked = requests.read_text()
    assert "GET /hang/loki/" in asked  # the hanging backend was really asked
    logs = [e for e in evidence if e.source == "logs"]
    assert logs
    for item in logs:  # every log examination failed: inconclusive, never support
        assert item.verdict == "inconclusive"
        assert "timed out" in item.summary
        assert item.signals.get("m.failed") is True
    # the gate decided on what the metrics proved
    supported = {e.hypothesis.entity for e in evidence if e.verdict == "supports"}
    assert supported == {"carts"}
    assert {e.source for e in evidence if e.verdict == "supports"} == {"metrics"}
    assert investigation.exit == "confident"
    assert investigation.root_cause_entity == "carts"


def test_every_backend_hanging_still_ends_in_a_decision(
    backends: tuple[int, Path], live_telemetry: None
) -> None:
    port, requests = backends
    hanging = HANGING.format(port=port)
    _configure(prometheus=hanging, loki=hanging)
    _, investigation, evidence = _investigate()
    asked = requests.read_text()
    assert "GET /hang/api/v1/" in asked
    assert "GET /hang/loki/" in asked
    assert not [e for e in evidence if e.verdict == "supports"]
    assert investigation.exit == "no_confident_root_cause"
    assert investigation.root_cause_entity == ""
    assert investigation.tier == "notify"
