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
from tests.live.conftest import StartAlertmanager, StartPrometheus
from tests.live.test_replay_alert import replay_until_incident

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
    started = time.monotonic()
    manifest, prom, incident = replay_until_incident(CASE, live_server, prometheus, alertmanager, tmp_path)
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
    assert manifest["case"]["case_id"] == CASE
    print(f"replay to incident {notified - started:.0f} s, live investigation {took:.1f} s")
