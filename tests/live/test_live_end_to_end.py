"""Recorded cases end to end through the live path: replayed into real Prometheus servers, their alerts
routed by real Alertmanagers to Rootline's webhook with an intake token, and one incident investigated live
(Prometheus only: metrics, service-graph topology) with its root cause asserted.

The two replays run side by side, so the suite waits for `for: 1m` and Alertmanager's group wait once:
one watched through its request series, one through its containers only."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from rca.incidents.investigations import run_investigation
from tests.live.conftest import StartAlertmanager, StartPrometheus
from tests.live.test_replay_alert import assert_notified_by_alertmanager, replay_until_incidents

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DATA_DIR: Path | None = settings.ROOTLINE_DATA_DIR
# An Online Boutique case (1-minute data): the cart service slows the front end's calls to it. Its replay
# holds the front end's OpenTelemetry HTTP client histogram (the alert's signal) and the service graph
# (the topology).
CASE = "nezha/2022-08-22/05"
ROOT_CAUSE = "cartservice"
# A Sock Shop case (1 s data, ten minutes long): its front end records CPU and memory only, so its rules
# watch its containers (its memory deviates throughout, z ~ 16).
CONTAINERS_ONLY = "rcd/carts-cpu/1"


@pytest.mark.skipif(DATA_DIR is None, reason="no public data folder (ROOTLINE_DATA_DIR)")
def test_replayed_cases_are_alerted_and_one_investigated_live_finds_its_root_cause(
    live_server: Any, prometheus: StartPrometheus, alertmanager: StartAlertmanager, tmp_path: Path
) -> None:
    started = time.monotonic()
    requests, containers = replay_until_incidents(
        [CASE, CONTAINERS_ONLY], live_server, prometheus, alertmanager, tmp_path
    )
    notified = time.monotonic()
    for replayed in (requests, containers):
        assert_notified_by_alertmanager(replayed)
    container_rules = {a.labels["alertname"] for a in containers.incident.alerts.all()}
    assert container_rules
    assert container_rules <= {"CPUAnomaly", "MemoryAnomaly"}

    investigation = requests.incident.investigations.get()
    with override_settings(ROOTLINE_LIVE_TELEMETRY={"prometheus": {"url": requests.prometheus.url}}):
        run_investigation(investigation.pk)
    investigation.refresh_from_db()
    took = time.monotonic() - notified

    assert investigation.status == investigation.Status.SUCCEEDED, investigation.error
    assert investigation.topology["origin"] == "service-graph metrics (prometheus)"
    assert investigation.backends["prometheus"] == "configured"
    # what the engine weighed travels in the message (in full: a repr would be cut), so a miss says why
    weighed = f"alert {investigation.incident.onset}; gate {investigation.gate}; " + "; ".join(
        f"{c['entity']} {c['fault_kind']} {c['score']} {c['belief']} {c['detail']}"
        for c in investigation.candidates[:4]
    )
    assert investigation.root_cause_entity == ROOT_CAUSE, weighed
    assert requests.manifest["case"]["case_id"] == CASE
    print(f"replays to incidents {notified - started:.0f} s, live investigation {took:.1f} s")
