"""The replayed cluster's alerting: a Prometheus rule file on the entry service, Prometheus's and
Alertmanager's configuration.

The entry service (the alert entity of the recorded case, what users call) is watched as a live cluster
would watch it, through every request source its replay holds for it:

- its HTTP server requests (`http_server_request_duration_seconds`): error ratio (5xx share) and p99;
- its own HTTP client calls (`http_client_request_duration_seconds`): error ratio and p99;
- its calls in the service graph (`traces_service_graph_request_*{client=...}`): failed share and p99;

and, only when it has none of these (RCD's front end records CPU and memory only), its containers'
CPU and memory (cAdvisor), in either direction as the recorded rule watches them.

Each signal alerts, `for: 1m`, when its worst value within the lookback delta (the highest for a signal
that goes bad upwards, the lowest for one that goes bad downwards) as a robust z-score against the
baseline hour (see `timeline`) reaches the threshold of the recorded alert rule
(`rca.telemetry.recorded.alerting`: 4, in its bad direction, with the same 2.5 % floor on the spread and
at least 3 baseline points). The spread is the interquartile range / 1.349 (a normal distribution's IQR
in standard deviations), since PromQL has no median absolute deviation; latency, CPU and memory are
floored at 2.5 % of their median, an error ratio at 2.5 % of the success ratio (as the recorded rule
floors a success rate).

Why the worst value and not the latest: the replayed data ends when the replay is written, so a rate
evaluated after that reads a window holding ever fewer samples, and the latest value drifts while the
alert is pending. Measured on an Online Boutique case (1-minute data), the latest value's z read 5.5, 7.1,
2.4 and 4.1 in the first four minutes: whether `for: 1m` held depended on the second Prometheus started
in. The worst value within the lookback keeps the last full window's until the lookback runs out; it
begins to hold at the same evaluation as the latest value does, so when a condition began (what a live
investigation asks Prometheus) is unchanged. Nothing here reads ground truth: the rules name the entry
service and the convention series only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from rca.telemetry.model import Alert, Direction
from rca.telemetry.recorded.alerting import RELATIVE_FLOOR, THRESHOLD
from rca.telemetry.replay.conventions import (
    CPU_USAGE,
    ERROR_STATUS,
    GRAPH_CLIENT,
    GRAPH_FAILED,
    GRAPH_REQUESTS,
    HTTP_CLIENT,
    HTTP_SERVER,
    MEMORY_WORKING_SET,
)
from rca.telemetry.replay.openmetrics import Exposition
from rca.telemetry.replay.timeline import (
    BASELINE_SPAN,
    EVALUATION_INTERVAL,
    RULE_FOR,
    Timeline,
    duration_text,
)

IQR_TO_SIGMA = 1.349
MIN_BASELINE_POINTS = 3  # as the recorded rule (alerting.robust_scores)
# Alertmanager's group_wait defaults to 30 s; 10 s keeps a replayed alert's way to the webhook short.
GROUP_WAIT = "10s"
# group_interval defaults to 5 m: at 1 m a second rule of the entry firing reaches the same incident soon.
GROUP_INTERVAL = "1m"
REPEAT_INTERVAL = "4h"  # Alertmanager's default
RULE_GROUP = "rootline-replay"
RECEIVER = "rootline"


@dataclass(frozen=True)
class Signal:
    """One watched expression of the entry service."""

    alert: str
    expr: str
    direction: Direction
    floor: str  # the spread's floor as PromQL over `{median}`
    summary: str


RELATIVE = f"{RELATIVE_FLOOR:g} * abs({{median}})"
OF_SUCCESS = f"{RELATIVE_FLOOR:g} * (1 - {{median}})"


def quote(value: str) -> str:
    """A PromQL string literal (double-quoted, Go escapes)."""
    return json.dumps(value)


def _pair(alert: str, latency: str, errors: str | None, entry: str, what: str) -> list[Signal]:
    """An error-ratio signal (when the series of failures exists) and a p99 signal."""
    out = []
    if errors is not None:
        out.append(
            Signal(
                f"{alert}ErrorRatioAnomaly",
                errors,
                Direction.UP,
                OF_SUCCESS,
                f"{entry}: error ratio of {what}",
            )
        )
    out.append(
        Signal(
            f"{alert}LatencyP99Anomaly", latency, Direction.UP, RELATIVE, f"{entry}: p99 latency of {what}"
        )
    )
    return out


def signals(expo: Exposition, entry: str, namespace: str, window: float) -> list[Signal]:
    """The entry service's signals from every request source its replay holds, or its containers' when it
    holds none (see module docstring)."""
    w = duration_text(window)
    out: list[Signal] = []
    for family, alert, what in (
        (HTTP_SERVER, "", "the requests it serves"),
        (HTTP_CLIENT, "Client", "its requests"),
    ):
        if not expo.has_series(family, service_name=entry):
            continue
        sel = f"service_name={quote(entry)}"
        latency = (
            f"histogram_quantile(0.99, sum by (service_name, le) (rate({family.name}_bucket{{{sel}}}[{w}])))"
        )
        errors = None
        if expo.has_series(family, service_name=entry, http_response_status_code=ERROR_STATUS):
            failed = f'{sel}, http_response_status_code=~"5.."'
            errors = (
                f"sum by (service_name) (rate({family.name}_count{{{failed}}}[{w}])) "
                f"/ sum by (service_name) (rate({family.name}_count{{{sel}}}[{w}]))"
            )
        out.extend(_pair(alert, latency, errors, entry, what))
    if expo.has_series(GRAPH_REQUESTS, client=entry):
        sel = f"client={quote(entry)}"
        latency = (
            f"histogram_quantile(0.99, sum by (client, le) (rate({GRAPH_CLIENT.name}_bucket{{{sel}}}[{w}])))"
        )
        errors = None
        if expo.has_series(GRAPH_FAILED, client=entry):
            errors = (
                f"sum by (client) (rate({GRAPH_FAILED.name}_total{{{sel}}}[{w}])) "
                f"/ sum by (client) (rate({GRAPH_REQUESTS.name}_total{{{sel}}}[{w}]))"
            )
        found = _pair("Call", latency, errors, entry, "its calls in the service graph")
        out.extend(
            s for s in found if "Latency" not in s.alert or expo.has_series(GRAPH_CLIENT, client=entry)
        )
    if out:
        return out
    sel = f"namespace={quote(namespace)}, container={quote(entry)}"
    if expo.has_series(CPU_USAGE, container=entry):
        cpu = f"sum by (namespace, container) (rate({CPU_USAGE.name}_total{{{sel}}}[{w}]))"
        out.append(Signal("CPUAnomaly", cpu, Direction.BOTH, RELATIVE, f"{entry}: CPU use"))
    if expo.has_series(MEMORY_WORKING_SET, container=entry):
        memory = f"sum by (namespace, container) ({MEMORY_WORKING_SET.name}{{{sel}}})"
        out.append(Signal("MemoryAnomaly", memory, Direction.BOTH, RELATIVE, f"{entry}: memory working set"))
    return out


def anomaly_expr(signal: Signal, timeline: Timeline) -> str:
    """`signal`'s worst recent value as a robust z-score against its baseline hour, where it reaches the
    threshold (see module docstring)."""
    resolution = duration_text(timeline.resolution)
    recent = f"({signal.expr})[{duration_text(timeline.lookback_delta)}:{resolution}]"
    highest, lowest = f"max_over_time({recent})", f"min_over_time({recent})"
    base = (
        f"({signal.expr})[{duration_text(BASELINE_SPAN)}:{resolution}] "
        f"offset {duration_text(timeline.baseline_offset)}"
    )
    median = f"quantile_over_time(0.5, {base})"
    spread = f"(quantile_over_time(0.75, {base}) - quantile_over_time(0.25, {base})) / {IQR_TO_SIGMA}"
    floor = signal.floor.format(median=median)
    sigma = f"clamp_min(({spread} > {floor}) or {floor}, 1e-9)"
    rise, fall = f"{highest} - {median}", f"{median} - {lowest}"
    if signal.direction is Direction.UP:
        deviation = rise
    elif signal.direction is Direction.DOWN:
        deviation = fall
    else:  # the larger of the two, series by series
        deviation = f"(({rise}) >= ({fall})) or ({fall})"
    return f"({deviation}) / {sigma} >= {THRESHOLD:g}\nand count_over_time({base}) >= {MIN_BASELINE_POINTS}"


def rule_file(found: list[Signal], entry: str, timeline: Timeline) -> dict[str, Any]:
    """The rule file's content."""
    rules = [
        {
            "alert": s.alert,
            "expr": anomaly_expr(s, timeline),
            "for": duration_text(RULE_FOR),
            "labels": {"severity": "critical", "service_name": entry},
            "annotations": {
                "summary": f"{s.summary} is anomalous",
                "description": (
                    'robust z = {{ $value | printf "%.1f" }} against the hour ending '
                    f"{duration_text(timeline.baseline_offset)} ago"
                ),
            },
        }
        for s in found
    ]
    return {"groups": [{"name": RULE_GROUP, "interval": duration_text(EVALUATION_INTERVAL), "rules": rules}]}


# The recorded alert's metric family -> the watched signal that stands for it (by alert name).
_SIGNAL_OF_FAMILY = (("latency", "LatencyP99"), ("success", "ErrorRatio"), ("cpu", "CPU"), ("mem", "Memory"))


def recorded_alert(alert: Alert, found: list[Signal], timeline: Timeline) -> dict[str, Any]:
    """The case's own alert (what its loader gives the engine) as Alertmanager's `POST /api/v2/alerts`
    takes it, at its replayed time, with the expression of the watched signal of its metric family when
    there is one: for a run that wants the recorded alert's timing whatever the rules make of the data.
    `generatorURL` is the poster's to add (it knows Prometheus's address)."""
    metric = (alert.metric or "").lower()
    wanted = next((name for family, name in _SIGNAL_OF_FAMILY if family in metric), None)
    signal = next((s for s in found if wanted is not None and wanted in s.alert), None)
    labels = {"alertname": "RecordedAlert", "service_name": alert.entity, "severity": alert.severity}
    if alert.metric:
        labels["metric"] = alert.metric
    starts = datetime.fromtimestamp(timeline.onset, UTC).isoformat().replace("+00:00", "Z")
    return {
        "labels": labels,
        "annotations": {"summary": alert.summary} if alert.summary else {},
        "startsAt": starts,
        "expr": anomaly_expr(signal, timeline) if signal is not None else None,
    }


def prometheus_config(rules: Path, alertmanager: str) -> dict[str, Any]:
    """prometheus.yml: the rule file, Alertmanager's address, no scrape job (the replay is the data)."""
    return {
        "global": {"evaluation_interval": duration_text(EVALUATION_INTERVAL)},
        "rule_files": [str(rules)],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
    }


def alertmanager_config(webhook: str, token_file: Path) -> dict[str, Any]:
    """alertmanager.yml: every alert of the entry service, grouped by it, to Rootline's webhook."""
    return {
        "route": {
            "receiver": RECEIVER,
            "group_by": ["service_name"],
            "group_wait": GROUP_WAIT,
            "group_interval": GROUP_INTERVAL,
            "repeat_interval": REPEAT_INTERVAL,
        },
        "receivers": [
            {
                "name": RECEIVER,
                "webhook_configs": [
                    {
                        "url": webhook,
                        "send_resolved": True,
                        "http_config": {
                            "authorization": {"type": "Bearer", "credentials_file": str(token_file)}
                        },
                    }
                ],
            }
        ],
    }


def write_yaml(path: Path, content: dict[str, Any]) -> None:
    """A configuration file as YAML, in the order given."""
    path.write_text(yaml.safe_dump(content, sort_keys=False, width=10_000))
