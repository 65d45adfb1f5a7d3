"""Recorded cases replayed into real Prometheus servers, alerted by real Alertmanagers into Rootline's
webhook served by a live test server: each alert arrives as an Alertmanager v4 POST and opens an incident.
The replay helpers here serve the end-to-end test (test_live_end_to_end), which waits for the alerts once."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from django.conf import settings

from rca.incidents.models import Incident, IntakeSource
from rca.incidents.tokens import issue_token
from rca.integrations.prometheus.alerts import selectors
from rca.telemetry.cases import read_index
from rca.telemetry.replay.replay import replay_case
from rca.telemetry.replay.servers import Server
from tests.conftest import free_port
from tests.live.conftest import StartAlertmanager, StartPrometheus

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DATA_DIR: Path | None = settings.ROOTLINE_DATA_DIR
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


@dataclass(frozen=True)
class Replayed:
    """One replayed case: its manifest, its Prometheus and the incident its alert opened."""

    manifest: dict[str, Any]
    prometheus: Server
    incident: Incident


def replay_until_incidents(
    cases: Sequence[str],
    live_server: Any,
    prometheus: StartPrometheus,
    alertmanager: StartAlertmanager,
    tmp_path: Path,
) -> list[Replayed]:
    """Replay each of `cases` with an Alertmanager intake token, start each one's servers side by side,
    and wait for the incident each one's alert opens (by its entry service)."""
    assert DATA_DIR is not None
    started = time.monotonic()
    refs = {r.case_id: r for r in read_index(DATA_DIR)}
    token = issue_token("replay test", IntakeSource.ALERTMANAGER)
    running: list[tuple[dict[str, Any], Server, Server]] = []
    for n, case in enumerate(cases):
        am_port = free_port()
        manifest = replay_case(
            DATA_DIR,
            refs[case],
            tmp_path / f"replay-{n}",
            token=token.token,
            webhook=live_server.url + WEBHOOK,
            alertmanager=f"127.0.0.1:{am_port}",
        )
        paths = manifest["paths"]
        am = alertmanager(Path(paths["alertmanager_config"]), port=am_port)
        prom = prometheus(Path(paths["prometheus_config"]), Path(paths["tsdb"]), manifest["prometheus_flags"])
        running.append((manifest, prom, am))
    deadline = started + ARRIVES_WITHIN
    return [
        Replayed(manifest, prom, wait_for_incident(manifest["entry_service"], deadline, prom, am))
        for manifest, prom, am in running
    ]


def assert_notified_by_alertmanager(replayed: Replayed) -> None:
    """The incident came from Alertmanager's v4 webhook, each alert carrying the replayed rule that fired
    on the entry service."""
    manifest, incident = replayed.manifest, replayed.incident
    entry = manifest["entry_service"]
    assert incident.symptom_entity == entry
    assert incident.recorded_case in (None, {})  # a live incident: nothing of the recording travels with it
    assert incident.investigations.count() == 1  # queued
    rules = yaml.safe_load(Path(manifest["paths"]["rules"]).read_text())["groups"][0]["rules"]
    expr_of = {r["alert"]: r["expr"] for r in rules}
    alerts = list(incident.alerts.all())  # every firing rule of the entry, in one notification
    assert alerts
    for alert in alerts:
        payload = alert.raw
        assert payload["version"] == "4"
        assert payload["receiver"] == "rootline"
        assert payload["status"] == "firing"
        assert payload["commonLabels"]["service_name"] == entry
        (sent,) = payload["alerts"]
        assert sent["labels"]["severity"] == "critical"
        # the rule's PromQL travels in the generatorURL (as Prometheus prints it), selecting the series
        # of the replay's rule file, on the entry service
        expr = parse_qs(urlsplit(sent["generatorURL"]).query)["g0.expr"][0]
        assert alert.labels["alertname"] in expr_of
        assert _selected(expr) == _selected(expr_of[alert.labels["alertname"]])
        assert f'="{entry}"' in expr
        # the replayed onset lies minutes before the alert, as on a live cluster
        assert manifest["timeline"]["onset"] < alert.starts_at.timestamp() - 60


def _selected(expr: str) -> set[tuple[str, frozenset[tuple[str, str, str]]]]:
    """The series an expression selects (Prometheus prints matchers sorted, its own way)."""
    return {(s.name, frozenset(s.matchers)) for s in selectors(expr)}


def wait_for_incident(entry: str, deadline: float, prom: Server, am: Server) -> Incident:
    """The incident the webhook opens on `entry`, or a failure saying how far the alert got."""
    while time.monotonic() < deadline:
        found = Incident.objects.filter(source=IntakeSource.ALERTMANAGER, symptom_entity=entry).first()
        if found is not None:
            return found
        time.sleep(1.0)
    rules = prom.get("/api/v1/rules")["data"]["groups"]
    states = [(r["name"], r["state"]) for g in rules for r in g["rules"]]
    pytest.fail(
        f"no incident on {entry} within {ARRIVES_WITHIN:.0f} s; Prometheus rules: {states}; "
        f"Alertmanager alerts: {len(am.get('/api/v2/alerts'))}\n{am.log_tail()}"
    )
