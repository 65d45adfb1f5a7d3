"""Shared parsing rules: ids, pod names, severities, label-derived entities, times."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rca.integrations.otel import (
    entity_from_labels,
    normalize_id,
    opt_id,
    service_from_object,
    service_from_pod,
    severity_of,
    span_kind,
    span_status,
)
from rca.integrations.parsing import ShapeError, parse_rfc3339, quote
from rca.telemetry.model import Severity, SpanKind, SpanStatus


@given(st.binary(min_size=16, max_size=16))
def test_trace_ids_read_the_same_from_hex_and_base64(raw: bytes) -> None:
    expected = raw.hex()
    assert normalize_id(raw.hex().upper(), 16, "id") == expected
    assert normalize_id(base64.b64encode(raw).decode(), 16, "id") == expected
    assert normalize_id(base64.urlsafe_b64encode(raw).decode(), 16, "id") == expected


@given(st.binary(min_size=8, max_size=8))
def test_span_ids_read_the_same_from_hex_and_base64(raw: bytes) -> None:
    assert normalize_id(base64.b64encode(raw).decode(), 8, "id") == raw.hex()
    assert normalize_id(raw.hex(), 8, "id") == raw.hex()


def test_short_hex_ids_are_zero_padded_and_bad_ids_rejected() -> None:
    assert normalize_id("1a2b3c4d5e6f7081", 16, "id") == "0" * 16 + "1a2b3c4d5e6f7081"
    assert (
        normalize_id("AAAAAAAAAABguiq7RPE+rg", 16, "id") == "0000000000000000" + "60ba2abb44f13eae"
    )  # unpadded
    assert opt_id("", 8, "id") is None
    assert opt_id("AAAAAAAAAAA=", 8, "id") is None
    with pytest.raises(ShapeError):
        normalize_id("not-an-id!", 16, "id")
    with pytest.raises(ShapeError):
        normalize_id(base64.b64encode(b"12345").decode(), 8, "id")


@pytest.mark.parametrize(
    ("pod", "service"),
    [
        ("cartservice-7d4b9c8f6d-x2k4j", "cartservice"),  # deployment: <name>-<rs hash>-<5>
        ("ts-order-service-5f7b8c9d4-8wq6z", "ts-order-service"),
        ("legacy-api-3724966154-k2m4p", "legacy-api"),  # pre-1.8 numeric pod-template-hash
        ("redis-cart-0", "redis-cart"),  # statefulset: <name>-<ordinal>
        ("kafka-12", "kafka"),
        ("fluent-bit-x7k2p", "fluent-bit"),  # daemonset / job: <name>-<5>
        ("frontend", "frontend"),
        ("order-api", "order-api"),  # vowels: not a generated suffix
    ],
)
def test_service_from_pod(pod: str, service: str) -> None:
    assert service_from_pod(pod) == service


def test_service_from_object() -> None:
    assert service_from_object("ReplicaSet", "frontend-5d8f9c7b6") == "frontend"
    assert service_from_object("Deployment", "frontend") == "frontend"
    assert service_from_object("Node", "gke-node-1") == "gke-node-1"


@pytest.mark.parametrize(
    ("labels", "line", "severity"),
    [
        ({"level": "warn"}, "ERROR in body", Severity.WARN),  # a level label beats the line
        ({"detected_level": "unknown"}, 'ts=1 level=error msg="boom"', Severity.ERROR),
        ({}, '{"severity_text":"Warning","msg":"slow"}', Severity.WARN),
        ({}, "2024-05-01 10:00:00 FATAL out of memory", Severity.FATAL),
        ({}, "request finished, no errors", Severity.INFO),
        ({}, "[DEBUG] cache hit", Severity.DEBUG),
        ({"severity_text": "Information"}, "x", Severity.INFO),
    ],
)
def test_severity(labels: dict[str, str], line: str, severity: Severity) -> None:
    assert severity_of(labels, line, ("level", "detected_level", "severity_text")) is severity


def test_entity_from_labels() -> None:
    keys = ("service_name", "service", "job")
    assert entity_from_labels({"job": "shop/cart", "instance": "10.0.0.1:80"}, keys) == (
        "cart",
        "10.0.0.1:80",
    )
    assert entity_from_labels({"service": "cart", "job": "x", "pod": "cart-0"}, keys) == ("cart", "cart-0")
    assert entity_from_labels({"pod": "cart-7d4b9c8f6d-x2k4j"}, keys) == ("cart", "cart-7d4b9c8f6d-x2k4j")
    assert entity_from_labels({}, keys) == (None, None)


def test_span_enums_in_every_spelling() -> None:
    assert span_kind(3) is span_kind("SPAN_KIND_CLIENT") is span_kind("client") is SpanKind.CLIENT
    assert span_kind("weird") is SpanKind.UNSPECIFIED
    assert span_status(2) is span_status("STATUS_CODE_ERROR") is span_status("ERROR") is SpanStatus.ERROR


def test_times_and_quoting() -> None:
    assert parse_rfc3339("2024-05-01T10:00:00.123456789Z", "t") == pytest.approx(1714557600.123456)
    assert parse_rfc3339("2024-05-01T12:00:00+02:00", "t") == 1714557600.0
    with pytest.raises(ShapeError):
        parse_rfc3339("yesterday", "t")
    assert quote('a"b\\c') == '"a\\"b\\\\c"'
