"""Incident services called by intake, tasks and views: the audit trail, and the refusal they raise."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import models

from rca.incidents.models import AuditEvent


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


class Refusal(Exception):
    """A service refused a request: `code` names the rule (each service lists its codes as class
    constants), `message` says why in words, `field` names the input at fault (if one is)."""

    def __init__(self, code: str, message: str, field: str = "") -> None:
        self.code = code
        self.message = message
        self.field = field
        super().__init__(f"{code}: {message}")
