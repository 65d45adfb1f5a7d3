"""The intake service: an alert payload becomes Alert rows that join or open an Incident.

Called by the webhooks (Alertmanager v4, generic JSON) and by `manage.py import_case`. Rules:

* identity of an alert episode = (source, fingerprint, firing time); a re-send of an episode stores
  nothing new and opens nothing (a firing->resolved transition updates the stored row);
* alerts with the same group key (Alertmanager's `groupKey`) join the group's one active incident;
  a firing alert in a group whose incident resolved less than `REOPEN_WITHIN` ago re-opens it
  (flapping alerts should not spawn an incident per flap);
* when every alert of an incident has resolved, the incident is resolved;
* each payload is ingested in one transaction; concurrent deliveries race on the database's unique
  constraints (one active incident per group, one row per episode) and the loser starts over.

Opening or re-opening an incident calls `investigations.queue_investigation`.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from django.conf import settings
from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone
from rest_framework import serializers
from rest_framework.settings import api_settings

from rca.incidents.investigations import queue_investigation
from rca.incidents.models import Alert, Incident, IntakeSource
from rca.incidents.serializers import AlertmanagerPayloadSerializer, GenericAlertSerializer
from rca.incidents.services import record_audit

if TYPE_CHECKING:  # the case loaders pull in pandas; webhooks need none of it
    from rca.telemetry.cases import CaseRef, RecordedCase

REOPEN_WITHIN = timedelta(minutes=30)
_RACE_RETRIES = 5  # each start-over follows a concurrent commit, so a handful always suffices
# How severe each usual severity label is (Alertmanager and syslog conventions), to keep the highest.
SEVERITY_RANK = {"info": 1, "low": 1, "warning": 2, "medium": 2, "error": 3, "high": 3, "critical": 4}

# Prometheus / Kubernetes label -> OpenTelemetry resource attribute (conventions §5.1, §5.6).
_K8S_LABELS = {
    "namespace": "k8s.namespace.name",
    "pod": "k8s.pod.name",
    "container": "k8s.container.name",
    "node": "k8s.node.name",
    "cluster": "k8s.cluster.name",
    "deployment": "k8s.deployment.name",
    "statefulset": "k8s.statefulset.name",
    "daemonset": "k8s.daemonset.name",
}
# Labels that name the service outright, most specific first; they beat `job`, which is often a
# scrape job ("http_checks") rather than a service.
_SERVICE_LABELS = ("service.name", "service_name", "service")


class IntakeError(ValueError):
    """A payload failed validation; `errors` maps each offending field path to its message."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{path}: {msg}" for path, msg in self.errors.items()))


@dataclass
class IntakeResult:
    """What one ingest call changed."""

    incidents: list[int] = field(default_factory=list)  # every incident the alerts belong to
    incidents_created: list[int] = field(default_factory=list)
    incidents_updated: list[int] = field(default_factory=list)
    alerts_stored: int = 0
    alerts_resolved: int = 0
    duplicates: int = 0

    def touched(self, incident_id: int) -> None:
        """Note an incident an alert of this call belongs to (changed or not)."""
        if incident_id not in self.incidents:
            self.incidents.append(incident_id)

    def created(self, incident: Incident) -> None:
        """Note a newly opened incident."""
        self.touched(incident.pk)
        if incident.pk not in self.incidents_created:
            self.incidents_created.append(incident.pk)

    def updated(self, incident: Incident) -> None:
        """Note a change to an incident that existed before this call."""
        self.touched(incident.pk)
        if incident.pk not in self.incidents_created and incident.pk not in self.incidents_updated:
            self.incidents_updated.append(incident.pk)


@dataclass(frozen=True)
class _AlertSpec:
    """One alert in source-independent form, as the shared ingest path consumes it."""

    source: str
    fingerprint: str
    group_key: str
    status: str
    starts_at: datetime
    ends_at: datetime | None
    labels: dict[str, str]
    annotations: dict[str, str]
    entity: dict[str, str]
    generator_url: str
    raw: dict[str, Any]
    title: str
    severity: str
    recorded_case: dict[str, str] | None = None

    @property
    def firing(self) -> bool:
        return self.status == Alert.Status.FIRING


# --- public entry points -------------------------------------------------------------------------


def ingest_alertmanager(payload: Any) -> IntakeResult:
    """Ingest an Alertmanager webhook payload (version 4) exactly as received.

    Each Alert's `raw` is the payload narrowed to that alert: every top-level key as received, and
    `alerts` holding only that alert's element, so the row is itself a valid v4 payload.
    Raises `IntakeError` naming each invalid field (e.g. `alerts[0].startsAt`).
    """
    data = _validated(AlertmanagerPayloadSerializer, payload)
    envelope = {key: value for key, value in payload.items() if key != "alerts"}
    specs = []
    for element, alert in zip(payload["alerts"], data["alerts"], strict=True):
        labels: dict[str, str] = alert["labels"]
        annotations: dict[str, str] = alert["annotations"]
        entity = otel_identity(labels)
        specs.append(
            _AlertSpec(
                source=IntakeSource.ALERTMANAGER,
                fingerprint=alert["fingerprint"] or label_fingerprint(labels),
                group_key=data["groupKey"],
                status=alert["status"],
                starts_at=alert["startsAt"],
                ends_at=alert["endsAt"],
                labels=labels,
                annotations=annotations,
                entity=entity,
                generator_url=alert["generatorURL"],
                raw={**envelope, "alerts": [element]},
                title=_title(labels, annotations, entity),
                severity=labels.get("severity", ""),
            )
        )
    return _ingest(specs)


def ingest_generic(payload: Any) -> IntakeResult:
    """Ingest one alert in Rootline's canonical JSON form (conventions §5.6).

    The fingerprint is `<source>:<external_id>`, so ids of different senders never collide; alerts
    group by `group_key` when given, else each external id is its own group.
    """
    data = _validated(GenericAlertSerializer, payload)
    labels: dict[str, str] = data["labels"]
    entity = {**otel_identity(labels), **data["entity"]}  # explicit attributes beat mapped labels
    sender = data["source"]
    spec = _AlertSpec(
        source=IntakeSource.GENERIC,
        fingerprint=f"{sender}:{data['external_id']}",
        group_key=f"{sender}:{data['group_key'] or data['external_id']}",
        status=data["status"],
        starts_at=data["starts_at"],
        ends_at=data["ends_at"],
        labels=labels,
        annotations=data["annotations"],
        entity=entity,
        generator_url=data["links"].get("generatorURL", ""),
        raw=dict(payload),
        title=data["title"],
        severity=data["severity"] or labels.get("severity", ""),
    )
    return _ingest([spec])


def ingest_recorded_case(data_dir: Path, ref: CaseRef, case: RecordedCase) -> IntakeResult:
    """Open the incident of a recorded public case, with its alert and a reference to its telemetry.

    Idempotent: the case's (dataset, case id) is the fingerprint, so importing twice finds the first
    incident. Only the alert a real system would have sent is stored; ground truth never is.
    """
    alert = case.alert
    fingerprint = f"{ref.dataset}:{ref.case_id}"
    labels = {"alertname": alert.name, **alert.labels}
    annotations = {"summary": alert.summary} if alert.summary else {}
    if alert.metric:
        annotations["metric"] = alert.metric
    spec = _AlertSpec(
        source=IntakeSource.RECORDED,
        fingerprint=fingerprint,
        group_key=fingerprint,
        status=Alert.Status.FIRING,
        starts_at=datetime.fromtimestamp(alert.fired_at, tz=UTC),
        ends_at=None,
        labels=labels,
        annotations=annotations,
        entity={"service.name": alert.entity},
        generator_url="",
        raw={
            "dataset": ref.dataset,
            "case_id": ref.case_id,
            "alert": {
                "name": alert.name,
                "entity": alert.entity,
                "fired_at": alert.fired_at,
                "severity": alert.severity,
                "metric": alert.metric,
                "summary": alert.summary,
                "labels": dict(alert.labels),
            },
        },
        title=f"{ref.system}: {alert.summary or alert.name}",
        severity=alert.severity,
        recorded_case={"dataset": ref.dataset, "case_id": ref.case_id, "data_dir": str(Path(data_dir))},
    )
    return _ingest([spec])


# --- label mapping ---------------------------------------------------------------------------------


def otel_identity(labels: Mapping[str, str]) -> dict[str, str]:
    """Map Prometheus/Kubernetes alert labels to OpenTelemetry resource attributes.

    `job` is `service.namespace/service.name` or `service.name`; explicit service labels
    (`service_name`, `service`) win over it; `instance` is `service.instance.id`; namespace, pod,
    container, node, ... become `k8s.*`. With no service label at all, the container name stands in
    (in Kubernetes deployments it is the service's name far more often than not).
    """
    identity: dict[str, str] = {}
    job = labels.get("job", "").strip()
    if "/" in job:
        namespace, _, name = job.partition("/")
        if namespace:
            identity["service.namespace"] = namespace
        if name:
            identity["service.name"] = name
    elif job:
        identity["service.name"] = job
    explicit = next((labels[key] for key in _SERVICE_LABELS if labels.get(key, "").strip()), None)
    if explicit is not None:
        identity["service.name"] = explicit.strip()
    if labels.get("service_namespace"):
        identity["service.namespace"] = labels["service_namespace"]
    if labels.get("instance"):
        identity["service.instance.id"] = labels["instance"]
    for label, attribute in _K8S_LABELS.items():
        if labels.get(label):
            identity[attribute] = labels[label]
    if "service.name" not in identity and "k8s.container.name" in identity:
        identity["service.name"] = identity["k8s.container.name"]
    return identity


def label_fingerprint(labels: Mapping[str, str]) -> str:
    """A stable hash of a label set, for senders that omit `fingerprint` (Alertmanager sends one)."""
    canonical = "\xff".join(f"{key}\xfe{labels[key]}" for key in sorted(labels))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# --- the shared ingest path ----------------------------------------------------------------------


# One instance of each payload serializer, its fields built once: DRF deep-copies every declared field
# (and the alert serializer's, for the list) each time a serializer is made, most of validation's cost.
# `run_validation` keeps nothing on the instance (it returns the data or raises), so threads share it.
_VALIDATORS: dict[type[serializers.Serializer[Any]], serializers.Serializer[Any]] = {}


def _validated(serializer_class: type[serializers.Serializer[Any]], payload: Any) -> dict[str, Any]:
    validator = _VALIDATORS.get(serializer_class)
    if validator is None:
        validator = _VALIDATORS.setdefault(serializer_class, serializer_class())
    try:
        return dict(validator.run_validation(payload))
    except serializers.ValidationError as exc:
        raise IntakeError(_flatten_errors(_serializer_errors(exc.detail))) from None


def _serializer_errors(detail: Any) -> Any:
    """`detail` as `Serializer.errors` words it: a body of `null` is "No data provided", not a field."""
    if isinstance(detail, list) and len(detail) == 1 and getattr(detail[0], "code", None) == "null":
        return {api_settings.NON_FIELD_ERRORS_KEY: ["No data provided"]}
    return detail


def _flatten_errors(detail: Any, path: str = "") -> dict[str, str]:
    """DRF's nested error structure as {"alerts[0].startsAt": "message", ...}."""
    out: dict[str, str] = {}
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            if key == api_settings.NON_FIELD_ERRORS_KEY:
                child = path or "payload"
            elif isinstance(key, int):  # ListField reports child errors by index
                child = f"{path}[{key}]"
            else:
                child = f"{path}.{key}" if path else str(key)
            out.update(_flatten_errors(value, child))
    elif isinstance(detail, list) and any(isinstance(item, Mapping | list) for item in detail):
        for index, item in enumerate(detail):
            if item:
                out.update(_flatten_errors(item, f"{path}[{index}]"))
    elif isinstance(detail, list):
        out[path or "payload"] = " ".join(str(item) for item in detail)
    else:
        out[path or "payload"] = str(detail)
    return out


# What a database says when a concurrent writer holds what this transaction needs for too long:
# SQLite's busy timeout expiring, PostgreSQL's deadlock detector or serialization check.
_LOCK_MESSAGES = (
    "database is locked",
    "database table is locked",
    "deadlock detected",
    "could not serialize",
)
_LOCK_BACKOFF_S = 0.05  # the first retry's wait, doubled each time: a few intake transactions' length


def is_lock_conflict(exc: OperationalError) -> bool:
    """Whether `exc` is a lock conflict a retry may get through (not an outage)."""
    return any(message in str(exc) for message in _LOCK_MESSAGES)


def _ingest(specs: list[_AlertSpec]) -> IntakeResult:
    """One delivery in one transaction, started over when it lost a race (a concurrent delivery
    committed the group's incident or one of its alerts first: the database's unique constraints
    refuse the second, and the new attempt reads what the first stored), and retried
    (ROOTLINE_INTAKE_LOCK_RETRIES times, with jittered backoff) when it lost a lock conflict; the last
    conflict, or any other database failure, raises."""
    retries = settings.ROOTLINE_RELIABILITY.intake_lock_retries
    locks = races = 0
    while True:
        try:
            return _ingest_once(specs)
        except IntegrityError as exc:
            # The whole transaction was rolled back (no savepoint per alert: each costs two
            # statements, and a race is rare), so starting over is safe, in a caller's transaction too.
            races += 1
            if races > _RACE_RETRIES:
                raise RuntimeError(f"gave up after {_RACE_RETRIES} concurrent-write retries") from exc
        except OperationalError as exc:
            if locks >= retries or not is_lock_conflict(exc) or transaction.get_connection().in_atomic_block:
                raise  # (inside a caller's transaction a retry cannot start afresh)
            time.sleep(_LOCK_BACKOFF_S * 2**locks * (0.5 + random.random()))  # noqa: S311
            locks += 1


def _ingest_once(specs: list[_AlertSpec]) -> IntakeResult:
    result = IntakeResult()
    # Read before the transaction, so the write lock (all of SQLite's, under IMMEDIATE) is held for the
    # writes only. What a concurrent delivery stores meanwhile is caught by the unique constraints.
    batch = _Batch(_stored_alerts(specs))
    with transaction.atomic():
        # A fixed order keeps concurrent deliveries of overlapping alerts from deadlocking.
        for spec in sorted(specs, key=lambda s: (s.fingerprint, s.starts_at)):
            _ingest_one(spec, result, batch)
        _flush(batch, result)
    return result


_AlertKey = tuple[str, str, datetime]


@dataclass
class _Batch:
    """What one delivery already knows, so each alert does not ask again: the episodes stored before
    it (one query for the whole payload), the incidents it has locked, by group, and the new firing
    alerts that join one of them, inserted together (`_flush`)."""

    stored: dict[_AlertKey, Alert]
    locked: dict[tuple[str, str], Incident] = field(default_factory=dict)
    pending: list[tuple[_AlertSpec, Alert]] = field(default_factory=list)


def _key(spec: _AlertSpec) -> _AlertKey:
    return (spec.source, spec.fingerprint, spec.starts_at)


def _stored_alerts(specs: list[_AlertSpec]) -> dict[_AlertKey, Alert]:
    """The delivery's alerts that are already stored, by (source, fingerprint, startsAt)."""
    if not specs:
        return {}
    found = Alert.objects.filter(
        source__in={s.source for s in specs}, fingerprint__in={s.fingerprint for s in specs}
    ).order_by()  # into a dict: the model's ordering would only cost a sort
    return {(a.source, a.fingerprint, a.starts_at): a for a in found}


def _ingest_one(spec: _AlertSpec, result: IntakeResult, batch: _Batch) -> None:
    group = (spec.source, spec.group_key)
    joins = batch.locked.get(group)
    existing = batch.stored.get(_key(spec))
    if spec.firing and existing is None and joins is not None and joins.status in Incident.ACTIVE:
        # A new alert joining an incident this delivery holds locked (it stays active): the usual case
        # of a group's second and later alerts. Inserted with the others in one statement.
        alert = _new_alert(spec, joins)
        batch.pending.append((spec, alert))
        batch.stored[_key(spec)] = alert  # a re-send of it later in the same delivery is a duplicate
        return
    _flush(batch, result)  # what follows may read or change the pending alerts' rows
    if existing is not None:
        if not spec.firing:  # a resolution may resolve the incident through another row object
            batch.locked.pop(group, None)
        _apply_to_stored(existing, spec, result)
        return
    incident, how = _incident_for(spec, joins)
    alert = _new_alert(spec, incident)
    alert.save(force_insert=True)  # a concurrent delivery's copy of it: IntegrityError, start over
    _absorb(incident, spec)
    # Written in the delivery's transaction: the incident stays locked by it until the end.
    batch.locked[group] = incident
    batch.stored[_key(spec)] = alert
    result.alerts_stored += 1
    if how == "created":
        result.created(incident)
    else:
        result.updated(incident)
    if how in ("created", "reopened") and incident.status != Incident.Status.RESOLVED:
        queue_investigation(incident)


def _new_alert(spec: _AlertSpec, incident: Incident) -> Alert:
    """The (unsaved) row of a new alert of `incident`."""
    return Alert(
        incident=incident,
        source=spec.source,
        fingerprint=spec.fingerprint,
        status=spec.status,
        labels=spec.labels,
        annotations=spec.annotations,
        entity=spec.entity,
        starts_at=spec.starts_at,
        # A firing alert's endsAt is only a projected expiry; ends_at records a real end.
        ends_at=None if spec.firing else (spec.ends_at or timezone.now()),
        generator_url=spec.generator_url,
        raw=spec.raw,
    )


def _flush(batch: _Batch, result: IntakeResult) -> None:
    """Insert the pending alerts in one statement and fold them into their incidents. (When one of
    them lost a race, a concurrent delivery having stored it first, the delivery starts over.)"""
    pending, batch.pending = batch.pending, []
    if not pending:
        return
    Alert.objects.bulk_create([alert for _, alert in pending])
    changed: dict[Incident, set[str]] = {}
    for spec, alert in pending:
        changed.setdefault(alert.incident, set()).update(_fold(alert.incident, spec))
    for incident, fields in changed.items():
        if fields:
            incident.save(update_fields=[*sorted(fields), "updated_at"])
    for _, alert in pending:
        result.alerts_stored += 1
        result.updated(alert.incident)


def _incident_for(
    spec: _AlertSpec, locked: Incident | None = None
) -> tuple[Incident, Literal["created", "reopened", "joined"]]:
    """The incident `spec` joins, locked: the group's active one, a recently resolved one, or a new one.

    `locked` is the group's incident this delivery already holds the lock of (it stays active: no
    other transaction can change it), so joining it needs no query.
    """
    if locked is not None and locked.status in Incident.ACTIVE:
        return locked, "joined"
    group = Incident.objects.select_for_update().filter(source=spec.source, group_key=spec.group_key)
    # One at most (a unique constraint): no ORDER BY, which `first()` would add.
    active = next(iter(group.filter(status__in=Incident.ACTIVE).order_by()[:1]), None)
    if active is not None:
        return active, "joined"
    recent = (
        group.filter(status=Incident.Status.RESOLVED, resolved_at__gte=timezone.now() - REOPEN_WITHIN)
        .order_by("-resolved_at")
        .first()
    )
    if recent is not None:
        if not spec.firing:
            return recent, "joined"  # a late resolution belongs to the episode that just ended
        recent.status = Incident.Status.OPEN
        recent.resolved_at = None
        recent.save()  # may violate the one-active-per-group constraint in a race: the caller retries
        record_audit("incident.reopened", recent, actor_label="intake", detail={"by": spec.fingerprint})
        return recent, "reopened"
    # A resolved alert of a group with no recent incident (its firing notification never reached
    # us) is still stored, on an incident that is resolved from the start and never investigated.
    incident = Incident.objects.create(
        title=spec.title,
        status=Incident.Status.OPEN if spec.firing else Incident.Status.RESOLVED,
        resolved_at=None if spec.firing else timezone.now(),
        severity=spec.severity,
        onset=spec.starts_at,
        symptom_entity=spec.entity.get("service.name", ""),
        fingerprint=spec.fingerprint,
        group_key=spec.group_key,
        source=spec.source,
        labels=spec.labels,
        recorded_case=spec.recorded_case,
    )
    return incident, "created"


def _absorb(incident: Incident, spec: _AlertSpec) -> None:
    """Fold a newly stored alert into its incident (written only when that changes it: most alerts of
    a group change nothing); a resolved one may resolve it."""
    changed = _fold(incident, spec)
    if changed:
        incident.save(update_fields=[*changed, "updated_at"])
    if not spec.firing:
        _resolve_if_quiet(incident)


def _fold(incident: Incident, spec: _AlertSpec) -> list[str]:
    """Earliest onset, highest severity, a symptom: set on `incident` (not saved); the changed fields."""
    changed: list[str] = []
    if spec.starts_at < incident.onset:
        incident.onset = spec.starts_at
        changed.append("onset")
    if SEVERITY_RANK.get(spec.severity.lower(), 0) > SEVERITY_RANK.get(incident.severity.lower(), 0):
        incident.severity = spec.severity
        changed.append("severity")
    if not incident.symptom_entity and spec.entity.get("service.name"):
        incident.symptom_entity = spec.entity["service.name"]
        changed.append("symptom_entity")
    return changed


def _apply_to_stored(stored: Alert, spec: _AlertSpec, result: IntakeResult) -> None:
    """A delivery of an episode we already hold: resolve it, or count it as a duplicate."""
    if spec.firing:  # a re-send changes nothing whatever the stored state: no lock needed
        result.touched(stored.incident_id)
        result.duplicates += 1
        return
    # Every change to an incident's alerts happens under the incident's row lock, so the
    # "all resolved?" check below sees every concurrent resolution that committed before it.
    incident = Incident.objects.select_for_update().get(pk=stored.incident_id)
    stored.refresh_from_db()
    result.touched(incident.pk)
    if stored.status == Alert.Status.RESOLVED:
        result.duplicates += 1  # the resolution, delivered again
        return
    stored.status = Alert.Status.RESOLVED
    stored.ends_at = spec.ends_at or timezone.now()
    stored.save(update_fields=["status", "ends_at"])
    result.alerts_resolved += 1
    result.updated(incident)
    _resolve_if_quiet(incident)


def _resolve_if_quiet(incident: Incident) -> None:
    """Resolve an active incident once none of its alerts is firing."""
    if incident.status not in Incident.ACTIVE:
        return
    if incident.alerts.filter(status=Alert.Status.FIRING).exists():
        return
    incident.status = Incident.Status.RESOLVED
    incident.resolved_at = timezone.now()
    incident.save()
    record_audit(
        "incident.resolved", incident, actor_label="intake", detail={"reason": "all alerts resolved"}
    )


def _title(labels: Mapping[str, str], annotations: Mapping[str, str], entity: Mapping[str, str]) -> str:
    summary = annotations.get("summary", "").strip()
    if summary:
        return summary[:500]
    name = labels.get("alertname", "alert")
    service = entity.get("service.name")
    return f"{name} on {service}"[:500] if service else name[:500]
