"""Incident services called by intake, tasks and views: the audit trail and the investigation hook."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import models

from rca.incidents.models import AuditEvent, Incident


def record_audit(
    verb: str,
    target: models.Model,
    *,
    actor: AbstractBaseUser | None = None,
    actor_label: str = "",
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one audit event about `target`; `actor_label` defaults to the actor's user name."""
    label = actor_label or (actor.get_username() if actor is not None else "system")
    return AuditEvent.objects.create(
        actor_id=actor.pk if actor is not None else None,
        actor_label=label,
        verb=verb,
        target_type=target._meta.label_lower,
        target_id=str(target.pk),
        detail=detail or {},
    )


def enqueue_investigation(incident: Incident) -> None:
    """Queue an investigation of `incident` (called by intake when it opens or re-opens one).

    For now this only records the "investigation.queued" audit event, inside the caller's transaction.
    The Celery `investigate` task is sent from here once it exists, through `transaction.on_commit`
    so that a worker never looks for an incident that is not committed yet.
    """
    record_audit(
        "investigation.queued",
        incident,
        actor_label="intake",
        detail={"source": incident.source, "group_key": incident.group_key},
    )
