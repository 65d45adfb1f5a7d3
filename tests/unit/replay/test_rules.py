"""The replayed cluster's rules and configuration: which signals of the entry service are watched, and
that Prometheus's and Alertmanager's own tools accept the files."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import yaml

from rca.telemetry.model import Alert
from rca.telemetry.recorded.alerting import Direction
from rca.telemetry.replay.conventions import (
    CPU_USAGE,
    GRAPH_CLIENT,
    GRAPH_FAILED,
    GRAPH_REQUESTS,
    HTTP_CLIENT,
    HTTP_SERVER,
    MEMORY_WORKING_SET,
)
from rca.telemetry.replay.openmetrics import Exposition, Family
from rca.telemetry.replay.rules import (
    alertmanager_config,
    anomaly_expr,
    prometheus_config,
    recorded_alert,
    rule_file,
    signals,
    write_yaml,
)
from rca.telemetry.replay.timeline import Timeline

T = np.array([1.0])
TIMELINE = Timeline.place(1_800_000_000.0, alert_time=1_000.0, step=60.0)


def with_series(*series: tuple[Family, dict[str, str]]) -> Exposition:
    expo = Exposition()
    for family, labels in series:
        if family.bounds:
            expo.add_histogram(family, labels, T, np.zeros((1, len(family.bounds) + 1)), np.zeros(1))
        else:
            expo.add(family, labels, T, np.ones(1))
    return expo


def names(expo: Exposition, entry: str = "front") -> list[str]:
    return [s.alert for s in signals(expo, entry, "shop", TIMELINE.window)]


def test_every_request_source_of_the_entry_is_watched() -> None:
    expo = with_series(
        (HTTP_SERVER, {"service_name": "front", "http_response_status_code": "200"}),
        (HTTP_SERVER, {"service_name": "front", "http_response_status_code": "500"}),
        (HTTP_CLIENT, {"service_name": "front", "http_response_status_code": "200"}),
        (GRAPH_REQUESTS, {"client": "front", "server": "cart"}),
        (GRAPH_FAILED, {"client": "front", "server": "cart"}),
        (GRAPH_CLIENT, {"client": "front", "server": "cart"}),
        (CPU_USAGE, {"container": "front"}),
        (HTTP_SERVER, {"service_name": "cart", "http_response_status_code": "500"}),
    )
    assert names(expo) == [
        "ErrorRatioAnomaly",
        "LatencyP99Anomaly",
        "ClientLatencyP99Anomaly",  # no 5xx series for its own calls: no error-ratio rule
        "CallErrorRatioAnomaly",
        "CallLatencyP99Anomaly",
    ]
    found = signals(expo, "front", "shop", TIMELINE.window)
    assert all('"front"' in s.expr and '"cart"' not in s.expr for s in found)
    assert found[0].expr == (
        'sum by (service_name) (rate(http_server_request_duration_seconds_count{service_name="front", '
        'http_response_status_code=~"5.."}[4m])) / sum by (service_name) '
        '(rate(http_server_request_duration_seconds_count{service_name="front"}[4m]))'
    )


def test_an_entry_without_request_series_is_watched_by_its_containers() -> None:
    expo = with_series((CPU_USAGE, {"container": "front"}), (MEMORY_WORKING_SET, {"container": "front"}))
    assert names(expo) == ["CPUAnomaly", "MemoryAnomaly"]
    assert {s.direction for s in signals(expo, "front", "shop", 16.0)} == {Direction.BOTH}
    assert names(with_series((GRAPH_REQUESTS, {"client": "front", "server": "cart"}))) == []
    assert names(Exposition()) == []


def test_the_anomaly_expression_reads_the_latest_value_against_the_baseline_hour() -> None:
    expo = with_series((HTTP_SERVER, {"service_name": "front", "http_response_status_code": "200"}))
    (latency,) = signals(expo, "front", "shop", TIMELINE.window)
    expr = anomaly_expr(latency, TIMELINE)
    worst = f"max_over_time(({latency.expr})[5m:1m])"  # latency goes bad upwards
    baseline = f"quantile_over_time(0.5, ({latency.expr})[1h:1m] offset 7m)"
    assert expr.startswith(f"({worst} - {baseline})")
    assert ">= 4\nand count_over_time(" in expr
    assert "0.025 * abs(quantile_over_time(0.5," in expr
    assert "/ 1.349" in expr


def test_promtool_accepts_the_rule_file_and_the_configuration(tmp_path: Path) -> None:
    expo = with_series(
        (HTTP_SERVER, {"service_name": "front", "http_response_status_code": "500"}),
        (GRAPH_REQUESTS, {"client": "front", "server": "cart"}),
        (GRAPH_FAILED, {"client": "front", "server": "cart"}),
        (GRAPH_CLIENT, {"client": "front", "server": "cart"}),
    )
    rules = tmp_path / "rules.yml"
    found = signals(expo, "front", "shop", TIMELINE.window)
    write_yaml(rules, rule_file(found, "front", TIMELINE))
    config = tmp_path / "prometheus.yml"
    write_yaml(config, prometheus_config(rules, "127.0.0.1:9093"))
    check = subprocess.run(["promtool", "check", "config", str(config)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 4 rules found" in check.stdout + check.stderr
    loaded = yaml.safe_load(rules.read_text())["groups"][0]
    assert loaded["interval"] == "15s"
    assert {r["for"] for r in loaded["rules"]} == {"1m"}
    assert {r["labels"]["service_name"] for r in loaded["rules"]} == {"front"}


def test_amtool_accepts_the_alertmanager_configuration(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("rlt_x")
    config = tmp_path / "alertmanager.yml"
    write_yaml(config, alertmanager_config("http://127.0.0.1:8000/api/v1/webhooks/alertmanager/", token))
    check = subprocess.run(["amtool", "check-config", str(config)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    receiver = yaml.safe_load(config.read_text())["receivers"][0]["webhook_configs"][0]
    assert receiver["http_config"]["authorization"] == {"type": "Bearer", "credentials_file": str(token)}
    assert "rlt_x" not in config.read_text()  # the token stays in its own file


def test_the_recorded_alert_is_ready_for_alertmanagers_api_at_its_replayed_time() -> None:
    expo = with_series((HTTP_SERVER, {"service_name": "front", "http_response_status_code": "200"}))
    found = signals(expo, "front", "shop", TIMELINE.window)
    alert = Alert(
        "front anomaly", "front", 1_000.0, "critical", "latency_p90", "front latency_p90 robust z=9"
    )
    posted = recorded_alert(alert, found, TIMELINE)
    assert posted["labels"] == {
        "alertname": "RecordedAlert",
        "service_name": "front",
        "severity": "critical",
        "metric": "latency_p90",
    }
    assert posted["annotations"] == {"summary": "front latency_p90 robust z=9"}
    assert posted["startsAt"] == datetime.fromtimestamp(TIMELINE.onset, UTC).isoformat().replace(
        "+00:00", "Z"
    )
    assert posted["expr"] == anomaly_expr(found[0], TIMELINE)  # the p99 rule stands for a latency alert
    unmatched = recorded_alert(Alert("detected", "front", 1_000.0), found, TIMELINE)
    assert unmatched["expr"] is None
    assert "metric" not in unmatched["labels"]
