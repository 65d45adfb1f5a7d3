"""Payload builders for the intake tests (Alertmanager webhook v4, conventions §5.2)."""

from __future__ import annotations

from typing import Any

GROUP = '{}/{severity="critical"}:{alertname="HighErrorRate"}'


def am_alert(
    fingerprint: str = "1a30ba71cca2921f",
    *,
    status: str = "firing",
    starts_at: str = "2024-05-01T10:00:00.123Z",
    ends_at: str = "0001-01-01T00:00:00Z",
    **labels: str,
) -> dict[str, Any]:
    """One element of a v4 `alerts` list."""
    return {
        "status": status,
        "labels": {"alertname": "HighErrorRate", "severity": "critical", "job": "shop/checkout", **labels},
        "annotations": {"summary": "checkout 5xx above 5%", "runbook_url": "https://runbooks/5xx"},
        "startsAt": starts_at,
        "endsAt": ends_at,
        "generatorURL": "http://prometheus:9090/graph?g0.expr=rate%28http_errors%5B5m%5D%29&g0.tab=1",
        "fingerprint": fingerprint,
    }


def am_payload(*alerts: dict[str, Any], group_key: str = GROUP, **extra: Any) -> dict[str, Any]:
    """A v4 webhook payload around `alerts` (one firing alert when none is given)."""
    alerts = alerts or (am_alert(),)
    return {
        "version": "4",
        "groupKey": group_key,
        "truncatedAlerts": 0,
        "status": "resolved" if all(a["status"] == "resolved" for a in alerts) else "firing",
        "receiver": "rootline",
        "groupLabels": {"alertname": "HighErrorRate"},
        "commonLabels": {"alertname": "HighErrorRate", "severity": "critical"},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": list(alerts),
        **extra,
    }


def resolved(alert: dict[str, Any], ends_at: str = "2024-05-01T10:20:00Z") -> dict[str, Any]:
    """The same alert episode, as Alertmanager reports it once resolved."""
    return {**alert, "status": "resolved", "endsAt": ends_at}
