"""Alert labels -> OpenTelemetry resource attributes (conventions §5.1, §5.6)."""

from __future__ import annotations

import pytest

from rca.incidents.intake import otel_identity

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"job": "checkout"}, {"service.name": "checkout"}),
        ({"job": "shop/checkout"}, {"service.namespace": "shop", "service.name": "checkout"}),
        ({"job": "http_checks", "service": "cart"}, {"service.name": "cart"}),
        ({"service": "cart", "service_name": "carts"}, {"service.name": "carts"}),
        (
            {"job": "shop/x", "service_namespace": "store"},
            {"service.namespace": "store", "service.name": "x"},
        ),
        ({"instance": "10.0.0.7:8080"}, {"service.instance.id": "10.0.0.7:8080"}),
        (
            {"namespace": "shop", "pod": "cart-1", "container": "cart", "node": "n1"},
            {
                "k8s.namespace.name": "shop",
                "k8s.pod.name": "cart-1",
                "k8s.container.name": "cart",
                "k8s.node.name": "n1",
                "service.name": "cart",  # the container stands in when nothing names the service
            },
        ),
        ({"alertname": "Watchdog"}, {}),
    ],
)
def test_otel_identity(labels: dict[str, str], expected: dict[str, str]) -> None:
    assert otel_identity(labels) == expected
