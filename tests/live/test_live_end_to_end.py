"""One recorded case end to end through the live path: replayed into a real Prometheus, its alert routed by a
real Alertmanager to Rootline's webhook with an intake token, the incident investigated live (Prometheus
only: metrics, service-graph topology), and the root cause asserted."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from rca.incidents.investigations import run_investigation
from rca.incidents.models import IntakeSource
from rca.incidents.tokens import issue_token
from rca.telemetry.cases import read_index
from rca.telemetry.replay.replay import replay_case
from tests.conftest import free_port
from tests.live.conftest import StartAlertmanager, StartPrometheus
from tests.live.test_replay_alert import ARRIVES_WITHIN, WEBHOOK, wait_for_incident

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DATA_DIR: Path | None = settings.ROOTLINE_DATA_DIR
# An Online Boutique case (1-minute data): the cart service slows the front end's calls to it. Its replay
# holds the front end's OpenTelemetry HTTP client histogram (the alert's signal) and the service graph
# (the topology).
CASE = "nezha/2022-08-22/05"
ROOT_CAUSE = "cartservice"


@pytest.mark.skipif(DATA_DIR is None, reason="no public data folder (ROOTLINE_DATA_DIR)")
def test_a_replayed_case_is_alerted_investigated_live_and_its_root_cause_found(
    live_server: Any, prometheus: StartPrometheus, alertmanager: StartAlertmanager, tmp_path: Path
) -> None:
    assert DATA_DIR is not None
    started = time.monotonic()
    ref = next(r for r in read_index(DATA_DIR) if r.case_id == CASE)
    token = issue_token("end-to-end test", IntakeSource.ALERTMANAGER)
    am_port = free_port()
    manifest = replay_case(
        DATA_DIR,
        ref,
        tmp_path / "replay",
        token=token.token,
        webhook=live_server.url + WEBHOOK,
        alertmanager=f"127.0.0.1:{am_port}",
    )
    paths = manifest["paths"]
    am = alertmanager(Path(paths["alertmanager_config"]), port=am_port)
    prom = prometheus(Path(paths["prometheus_config"]), Path(paths["tsdb"]), manifest["prometheus_flags"])

    incident = wait_for_incident(started + ARRIVES_WITHIN, prom, am)
    notified = time.monotonic()
    assert incident.recorded_case in (None, {})  # a live incident: nothing of the recording travels with it
    investigation = incident.investigations.get()
    with override_settings(ROOTLINE_LIVE_TELEMETRY={"prometheus": {"url": prom.url}}):
        run_investigation(investigation.pk)
    investigation.refresh_from_db()
    took = time.monotonic() - notified

    assert investigation.status == investigation.Status.SUCCEEDED, investigation.error
    assert investigation.topology["origin"] == "service-graph metrics (prometheus)"
    assert investigation.backends["prometheus"] == "configured"
    assert investigation.root_cause_entity == ROOT_CAUSE
    print(f"alert to incident {notified - started:.0f} s, live investigation {took:.1f} s")
