"""A recorded case replayed into a real Prometheus, alerted by a real Alertmanager into Rootline's webhook
served by a live test server: the alert arrives as an Alertmanager v4 POST and opens an incident."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings

from rca.incidents.models import Incident, IntakeSource
from rca.incidents.tokens import issue_token
from rca.telemetry.cases import read_index
from rca.telemetry.replay.replay import replay_case
from rca.telemetry.replay.servers import Server
from tests.conftest import free_port
from tests.live.conftest import StartAlertmanager, StartPrometheus

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DATA_DIR: Path | None = settings.ROOTLINE_DATA_DIR
# A Sock Shop case: 1 s data, ten minutes long, its front end's memory deviates throughout (z ~ 16).
CASE = "rcd/carts-cpu/1"
WEBHOOK = "/api/v1/webhooks/alertmanager/"
# `for: 1m` + a 15 s evaluation + Alertmanager's 10 s group_wait, with room for a loaded machine.
ARRIVES_WITHIN = 110.0


def test_empty_servers_start_on_free_ports_and_stop(
    prometheus: StartPrometheus, alertmanager: StartAlertmanager, tmp_path: Path
) -> None:
    config = tmp_path / "prometheus.yml"
    config.write_text("global: {evaluation_interval: 15s}\n")
    prom = prometheus(config, tmp_path / "tsdb")
    assert prom.get("/api/v1/status/buildinfo")["data"]["version"].startswith("2.")
    am_config = tmp_path / "alertmanager.yml"
    am_config.write_text("route: {receiver: none}\nreceivers: [{name: none}]\n")
    am = alertmanager(am_config)
    assert am.get("/api/v2/status")["cluster"]["status"] == "disabled"  # no gossip port
    assert prom.port != am.port
    for server in (prom, am):
        server.stop()
        assert server.process.poll() is not None


@pytest.mark.skipif(DATA_DIR is None, reason="no public data folder (ROOTLINE_DATA_DIR)")
def test_a_replayed_case_alerts_through_alertmanager_and_opens_an_incident(
    live_server: Any, prometheus: StartPrometheus, alertmanager: StartAlertmanager, tmp_path: Path
) -> None:
    started = time.monotonic()
    manifest, _, incident = replay_until_incident(CASE, live_server, prometheus, alertmanager, tmp_path)

    entry = manifest["entry_service"]
    assert incident.symptom_entity == entry
    assert incident.investigations.count() == 1  # queued; investigating it live is the next step
    alerts = list(incident.alerts.all())  # every firing rule of the entry, in one notification
    assert {a.labels["alertname"] for a in alerts} <= set(manifest["rules"])
    for alert in alerts:
        payload = alert.raw
        assert payload["version"] == "4"
        assert payload["receiver"] == "rootline"
        assert payload["status"] == "firing"
        assert payload["commonLabels"]["service_name"] == entry
        (sent,) = payload["alerts"]
        assert sent["labels"]["severity"] == "critical"
        # the rule's PromQL travels in the generatorURL, naming the entry and the convention series
        expr = parse_qs(urlsplit(sent["generatorURL"]).query)["g0.expr"][0]
        assert f'container="{entry}"' in expr
        assert "container_memory_working_set_bytes" in expr or "container_cpu_usage_seconds_total" in expr
        # the replayed onset lies minutes before the alert, as on a live cluster
        assert manifest["timeline"]["onset"] < alert.starts_at.timestamp() - 60
    assert time.monotonic() - started < ARRIVES_WITHIN


def replay_until_incident(
    case: str,
    live_server: Any,
    prometheus: StartPrometheus,
    alertmanager: StartAlertmanager,
    tmp_path: Path,
) -> tuple[dict[str, Any], Server, Incident]:
    """Replay `case` with an Alertmanager intake token, start both servers, and wait for the incident the
    webhook opens; the replay's manifest, its Prometheus and the incident."""
    assert DATA_DIR is not None
    started = time.monotonic()
    ref = next(r for r in read_index(DATA_DIR) if r.case_id == case)
    token = issue_token("replay test", IntakeSource.ALERTMANAGER)
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
    return manifest, prom, wait_for_incident(started + ARRIVES_WITHIN, prom, am)


def wait_for_incident(deadline: float, prom: Server, am: Server) -> Incident:
    """The incident the webhook opens, or a failure saying how far the alert got."""
    while time.monotonic() < deadline:
        found = Incident.objects.filter(source=IntakeSource.ALERTMANAGER).first()
        if found is not None:
            return found
        time.sleep(1.0)
    rules = prom.get("/api/v1/rules")["data"]["groups"]
    states = [(r["name"], r["state"]) for g in rules for r in g["rules"]]
    pytest.fail(
        f"no incident within {ARRIVES_WITHIN:.0f} s; Prometheus rules: {states}; "
        f"Alertmanager alerts: {len(am.get('/api/v2/alerts'))}\n{am.log_tail()}"
    )
