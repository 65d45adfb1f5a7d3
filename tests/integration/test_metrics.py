"""`/metrics`: Rootline's own telemetry in the Prometheus text format, read from the database and broker."""

from __future__ import annotations

import socket
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from rca.incidents.models import Alert, Evidence, Hypothesis
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def scrape(client: Client, **headers: Any) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def test_outcomes_investigations_tools_durations_model_use_intake_and_queues() -> None:
    confident = factories.investigation()
    confident.started_at = confident.finished_at - timedelta(seconds=1.5)
    confident.tokens_in, confident.tokens_out, confident.cost_usd = 1200, 300, 0.0081
    confident.save()
    factories.investigation(confident=False)
    hypothesis = Hypothesis.objects.filter(investigation=confident).first()
    assert hypothesis is not None
    Evidence.objects.create(
        hypothesis=hypothesis, seq=99, tool="logs", source="logs", verdict="refutes", summary="x"
    )
    Alert.objects.create(
        incident=confident.incident,
        source="alertmanager",
        fingerprint="fp-metrics",
        labels={"alertname": "HighErrorRate"},
        starts_at=confident.incident.onset,
        raw={},
    )
    samples = scrape(Client())
    assert samples["rootline_gate_outcomes_total"][(("exit", "confident"),)] == 1
    assert samples["rootline_gate_outcomes_total"][(("exit", "no_confident_root_cause"),)] == 1
    assert samples["rootline_investigations"][(("status", "succeeded"),)] == 2
    assert samples["rootline_investigations"][(("status", "failed"),)] == 0
    assert samples["rootline_tool_calls_total"][(("tool", "logs"), ("verdict", "refutes"))] == 1
    assert samples["rootline_investigation_duration_seconds_bucket"][(("le", "2.0"),)] >= 1
    assert samples["rootline_investigation_duration_seconds_bucket"][(("le", "1.0"),)] == 0
    assert samples["rootline_model_tokens_total"][(("direction", "input"),)] == 1200
    assert samples["rootline_model_cost_usd_total"][()] == pytest.approx(0.0081)
    assert samples["rootline_alerts_received_total"][(("source", "alertmanager"),)] == 1
    assert {dict(k)["queue"] for k in samples["rootline_queue_depth"]} == {"celery", "memory"}
    assert "process_resident_memory_bytes" in samples


def test_a_configured_token_guards_the_endpoint(settings: Any) -> None:
    settings.ROOTLINE_METRICS_TOKEN = "s3cret-scrape-token"
    client = Client()
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert "rootline_investigations" in scrape(client, HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")


def test_a_hung_broker_costs_a_scrape_at_most_the_health_deadline(settings: Any) -> None:
    """Redis accepting connections but never answering: the queue-depth series is left out in time."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # connections complete in the backlog and are never read
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    settings.ROOTLINE_RELIABILITY = replace(settings.ROOTLINE_RELIABILITY, health_timeout_s=0.5)
    try:
        started = time.monotonic()
        samples = scrape(Client())
        took = time.monotonic() - started
    finally:
        listener.close()
    assert "rootline_queue_depth" not in samples
    assert "rootline_investigations" in samples  # the rest of the scrape is there
    assert took < 3.0, took
