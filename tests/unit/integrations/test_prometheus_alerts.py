"""A Prometheus alert's metric and entity, from its labels and its rule's PromQL (the generatorURL)."""

from __future__ import annotations

from urllib.parse import quote_plus

import pytest

from rca.integrations.prometheus.alerts import alert_target, selectors
from rca.integrations.prometheus.connector import DEFAULT_ENTITY_LABELS
from rca.tools.faults import named_symptom
from rca.tools.stats import Family


def url(expr: str) -> str:
    return f"http://prometheus:9090/graph?g0.expr={quote_plus(expr)}&g0.tab=1"


ERRORS = (
    'sum(rate(http_server_request_duration_seconds_count{service_name="frontend", '
    'http_response_status_code=~"5.."}[5m])) / sum(rate(http_server_request_duration_seconds_count'
    '{service_name="frontend"}[5m])) > 0.05'
)
LATENCY = (
    "histogram_quantile(0.99, sum by (le) (rate(http_server_request_duration_seconds_bucket"
    '{service_name="frontend"}[5m]))) > 1'
)


def test_selectors_name_metrics_and_matchers() -> None:
    found = selectors(ERRORS)
    assert [s.name for s in found] == ["http_server_request_duration_seconds_count"] * 2
    assert ("http_response_status_code", "=~", "5..") in found[0].matchers
    assert found[1].matchers == (("service_name", "=", "frontend"),)


@pytest.mark.parametrize(
    ("labels", "expr", "metric", "entity", "family"),
    [
        (
            {"alertname": "HighErrors"},
            ERRORS,
            "http_server_request_duration_seconds_count_error_ratio",
            "frontend",
            Family.ERRORS,
        ),
        (
            {"alertname": "SlowFrontend"},
            LATENCY,
            "http_server_request_duration_seconds_latency",
            "frontend",
            Family.LATENCY,
        ),
        # a duration histogram measures latency whatever its name says (the service graph's names
        # requests); its mean (sum over count) too
        (
            {},
            "histogram_quantile(0.99, sum by (le) (rate(traces_service_graph_request_client_seconds_bucket"
            '{client="ts-gateway-service"}[1m]))) > 0.5',
            "traces_service_graph_request_client_seconds_latency",
            None,
            Family.LATENCY,
        ),
        (
            {"service_name": "cart"},
            "sum(rate(traces_span_metrics_duration_milliseconds_sum[1m])) / "
            "sum(rate(traces_span_metrics_duration_milliseconds_count[1m])) > 200",
            "traces_span_metrics_duration_milliseconds_latency",
            "cart",
            Family.LATENCY,
        ),
        # a container's series: the entity is its pod's workload
        (
            {"alertname": "Cpu"},
            'rate(container_cpu_usage_seconds_total{pod="carts-7d9fbc5c4b-x2x4z", container="carts"}[5m])',
            "container_cpu_usage_seconds_total",
            "carts",
            None,
        ),
        # the alert's own label wins over the expression; a `metric` label names the metric
        (
            {"service_name": "checkout", "metric": "latency_p99"},
            ERRORS,
            "latency_p99",
            "checkout",
            Family.LATENCY,
        ),
        # service-graph failures name failures by the metric itself
        (
            {},
            'sum(rate(traces_service_graph_request_failed_total{client="frontend"}[5m])) > 0',
            "traces_service_graph_request_failed_total",
            None,
            Family.ERRORS,
        ),
    ],
)
def test_alert_target(
    labels: dict[str, str], expr: str, metric: str, entity: str | None, family: Family | None
) -> None:
    target = alert_target(labels, url(expr), DEFAULT_ENTITY_LABELS)
    assert target.metric == metric
    assert target.entity == entity
    assert named_symptom(target.metric) is family


def test_an_expression_that_does_not_parse_leaves_it_to_the_labels() -> None:
    target = alert_target({"service": "cart"}, url("sum(rate(x[5m]"), DEFAULT_ENTITY_LABELS)
    assert target.metric is None
    assert target.entity == "cart"
    assert alert_target({}, "", DEFAULT_ENTITY_LABELS).entity is None
