"""Validation of intake payloads (the Alertmanager webhook v4 and Rootline's generic alert).

The serializers only check shape, types and lengths; `rca.incidents.intake` decides what the alerts
mean. Every value that ends up in a sized column is checked against that column's length here, so an
over-long one is a 400 naming the field on every database (SQLite does not enforce column lengths).
Unknown keys (Grafana's `orgId`, `values`, `silenceURL`, ...) are accepted and kept in the raw payload.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models
from rest_framework import serializers

from rca.incidents.models import Alert, Incident

ALERTMANAGER_VERSION = "4"


def _column(model: type[Alert | Incident], name: str) -> int:
    field = model._meta.get_field(name)
    assert isinstance(field, models.CharField)
    assert field.max_length is not None
    return field.max_length


FINGERPRINT_MAX = _column(Alert, "fingerprint")
GROUP_KEY_MAX = _column(Incident, "group_key")
SEVERITY_MAX = _column(Incident, "severity")
SERVICE_MAX = _column(Incident, "symptom_entity")
# Labels whose values become a sized column: the incident's severity, its symptom's service.name.
_SIZED_LABELS = {
    "severity": SEVERITY_MAX,
    "job": SERVICE_MAX,
    "service.name": SERVICE_MAX,
    "service_name": SERVICE_MAX,
    "service": SERVICE_MAX,
    "container": SERVICE_MAX,
}


def _check_sized(values: dict[str, str], sized: dict[str, int]) -> dict[str, str]:
    too_long = {key: limit for key, limit in sized.items() if len(values.get(key, "")) > limit}
    if too_long:
        raise serializers.ValidationError(
            "; ".join(f"{key} is longer than {limit} characters" for key, limit in too_long.items())
        )
    return values


ALERT_STATUSES = ("firing", "resolved")


def _labels() -> serializers.DictField:
    return serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False, default=dict
    )


def _zero_time_is_none(value: datetime | None) -> datetime | None:
    # Go's zero time ("0001-01-01T00:00:00Z") is how Alertmanager says "no end yet".
    return None if value is None or value.year <= 1 else value


class AlertmanagerAlertSerializer(serializers.Serializer[dict[str, Any]]):
    """One element of a v4 payload's `alerts` list."""

    status = serializers.ChoiceField(choices=ALERT_STATUSES)
    labels = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), allow_empty=False
    )
    annotations = _labels()
    startsAt = serializers.DateTimeField()
    endsAt = serializers.DateTimeField(required=False, allow_null=True, default=None)
    generatorURL = serializers.CharField(required=False, allow_blank=True, default="")
    # Identifiers and label values are kept exactly as sent (DRF would strip their whitespace, so two
    # different ids could collide).
    fingerprint = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=False, max_length=FINGERPRINT_MAX
    )

    def validate_labels(self, value: dict[str, str]) -> dict[str, str]:
        """Labels that become sized columns (severity, the service name) fit them."""
        return _check_sized(value, _SIZED_LABELS)

    def validate_endsAt(self, value: datetime | None) -> datetime | None:
        """Zero time means the alert has not ended."""
        return _zero_time_is_none(value)


class AlertmanagerPayloadSerializer(serializers.Serializer[dict[str, Any]]):
    """The Alertmanager `webhook_config` payload, version 4 (also what Grafana alerting posts)."""

    version = serializers.CharField()
    groupKey = serializers.CharField(trim_whitespace=False, max_length=GROUP_KEY_MAX)
    status = serializers.ChoiceField(choices=ALERT_STATUSES)
    receiver = serializers.CharField(required=False, allow_blank=True, default="")
    truncatedAlerts = serializers.IntegerField(required=False, min_value=0, default=0)
    groupLabels = _labels()
    commonLabels = _labels()
    commonAnnotations = _labels()
    externalURL = serializers.CharField(required=False, allow_blank=True, default="")
    alerts = serializers.ListField(child=AlertmanagerAlertSerializer(), allow_empty=False)

    def validate_version(self, value: str) -> str:
        """Only version 4 of the webhook format is understood."""
        if value != ALERTMANAGER_VERSION:
            raise serializers.ValidationError(
                f"unsupported webhook version {value!r} (expected {ALERTMANAGER_VERSION!r})"
            )
        return value


class GenericAlertSerializer(serializers.Serializer[dict[str, Any]]):
    """Rootline's canonical alert (conventions §5.6), for senders without a dedicated webhook."""

    # `source` shadows Field.source for type checkers only: the metaclass moves declared fields away.
    source = serializers.RegexField(  # type: ignore[assignment]
        r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", help_text="The sending system."
    )
    # The fingerprint is `<source>:<external_id>`: with a 64-character source it still fits its column.
    external_id = serializers.CharField(
        max_length=FINGERPRINT_MAX - 65, trim_whitespace=False, help_text="The sender's id for this alert."
    )
    status = serializers.ChoiceField(choices=ALERT_STATUSES)
    title = serializers.CharField(max_length=500)
    severity = serializers.CharField(max_length=SEVERITY_MAX, required=False, allow_blank=True, default="")
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    group_key = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=500, trim_whitespace=False
    )
    labels = _labels()
    annotations = _labels()
    entity = _labels()  # OpenTelemetry resource attributes, e.g. {"service.name": "checkout"}
    links = _labels()

    def validate_labels(self, value: dict[str, str]) -> dict[str, str]:
        """Labels that become sized columns (severity, the service name) fit them."""
        return _check_sized(value, _SIZED_LABELS)

    def validate_entity(self, value: dict[str, str]) -> dict[str, str]:
        """`service.name` becomes the incident's symptom: it fits that column."""
        return _check_sized(value, {"service.name": SERVICE_MAX})

    def validate_ends_at(self, value: datetime | None) -> datetime | None:
        """Zero time means the alert has not ended (as in Alertmanager)."""
        return _zero_time_is_none(value)
