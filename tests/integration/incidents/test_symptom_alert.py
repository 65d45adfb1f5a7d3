"""Which of an incident's alerts names its symptom for a live investigation: the first to fire, and of
alerts that fired together, the one on failed requests."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.test import override_settings

from rca.incidents.intake import ingest_alertmanager
from rca.incidents.investigations import telemetry_for
from rca.incidents.models import Incident
from tests.integration.incidents.payloads import am_alert, am_payload

pytestmark = pytest.mark.django_db

LATENCY = (
    "histogram_quantile(0.99, sum by (le) "
    '(rate(http_server_request_duration_seconds_bucket{service_name="frontend"}[5m]))) > 0.5'
)
ERRORS = (
    'sum(rate(http_server_request_duration_seconds_count{service_name="frontend",'
    'http_response_status_code=~"5.."}[5m])) / '
    'sum(rate(http_server_request_duration_seconds_count{service_name="frontend"}[5m])) > 0.05'
)


def _alert(fingerprint: str, name: str, expr: str, starts_at: str) -> dict[str, object]:
    alert = am_alert(fingerprint, starts_at=starts_at, alertname=name, service_name="frontend")
    return {**alert, "generatorURL": f"http://prometheus:9090/graph?g0.expr={quote(expr)}&g0.tab=1"}


@pytest.mark.parametrize(
    ("errors_at", "metric"),
    [
        # fired together: the failures name the symptom, though the latency alert was stored first
        ("2024-05-01T10:00:00Z", "http_server_request_duration_seconds_count_error_ratio"),
        # the latency alert fired a minute earlier: it is the first symptom
        ("2024-05-01T10:01:00Z", "http_server_request_duration_seconds_latency"),
    ],
)
def test_of_alerts_that_fired_together_the_one_on_failures_names_the_symptom(
    errors_at: str, metric: str
) -> None:
    payload = am_payload(
        _alert("a0", "LatencyP99High", LATENCY, "2024-05-01T10:00:00Z"),
        _alert("b0", "ErrorRatioHigh", ERRORS, errors_at),
    )
    ingest_alertmanager(payload)
    incident = Incident.objects.get()
    assert [a.fingerprint for a in incident.alerts.order_by("pk")] == ["a0", "b0"]
    with override_settings(ROOTLINE_LIVE_TELEMETRY={}):
        _, alert = telemetry_for(incident)
    assert alert.metric == metric
    assert alert.entity == "frontend"
