"""The responder workflow on an incident: acknowledge, assign, resolve, reopen.

Used by the API and the pages alike, so every rule lives here, on the server:

* only a responder or an approver (a superuser counts as one) may change an incident; a refused
  attempt is audited (`incident.<verb>_refused`), as a refused decision on an action is;
* acknowledge: an active (open or investigating) incident, once; reopening clears it, since a new
  episode needs someone to take it again;
* assign: to an active user holding the responder role or higher, or to nobody; any status;
* resolve: an active incident; the incident's alerts are left as they are (a firing alert of the group
  that arrives later opens or reopens an incident through intake, as for any resolution);
* reopen: a resolved incident, unless its alert group already has another active incident (there is
  at most one per group, see `Incident.Meta.constraints`);
* every change writes its AuditEvent in the same transaction, under the incident's row lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from rca.incidents.approvals import Role, User, has_role
from rca.incidents.models import Incident
from rca.incidents.services import Refusal, record_audit

# The longest note accepted with a resolution (characters): a sentence or two; comments hold the rest.
NOTE_MAX_LENGTH = 2_000


class WorkflowError(Refusal):
    """A workflow change was refused; `code` is one of the class constants, `message` says why."""

    FORBIDDEN = "forbidden"
    WRONG_STATE = "wrong_state"
    INVALID = "invalid"


def assignable_users() -> QuerySet[Any]:
    """Active users who may own an incident (responder or higher, or a superuser), by user name."""
    names = [r.value for r in Role if r.rank >= Role.RESPONDER.rank]
    return (
        get_user_model()
        .objects.filter(Q(is_superuser=True) | Q(groups__name__in=names), is_active=True)
        .distinct()
        .order_by("username")
    )


def acknowledge(incident: Incident, user: User) -> Incident:
    """Mark `incident` as taken by `user` (responder or approver); audited as `incident.acknowledged`."""

    def change(locked: Incident, actor: AbstractBaseUser) -> dict[str, Any]:
        _require_active(locked, "acknowledged")
        if locked.acknowledged_at is not None:
            who = locked.acknowledged_by.get_username() if locked.acknowledged_by else "someone"
            raise WorkflowError(WorkflowError.WRONG_STATE, f"this incident was already acknowledged by {who}")
        locked.acknowledged_at = timezone.now()
        locked.acknowledged_by = actor  # type: ignore[assignment]
        locked.save(update_fields=["acknowledged_at", "acknowledged_by", "updated_at"])
        return {}

    return _change(incident, user, "acknowledge", "incident.acknowledged", change)


def assign(incident: Incident, user: User, assignee: str | None) -> Incident:
    """Make the user named `assignee` (None or "": nobody) own `incident`; audited as `incident.assigned`
    with the previous and the new owner."""

    def change(locked: Incident, actor: AbstractBaseUser) -> dict[str, Any]:
        owner = None
        if assignee:
            owner = assignable_users().filter(username=assignee).first()
            if owner is None:
                raise WorkflowError(
                    WorkflowError.INVALID,
                    f"{assignee!r} is not an active user with the responder role (or higher)",
                    field="assignee",
                )
        previous = locked.assignee.get_username() if locked.assignee else None
        new = owner.get_username() if owner else None
        if previous == new:
            raise WorkflowError(
                WorkflowError.WRONG_STATE,
                f"this incident is already assigned to {new}" if new else "this incident is not assigned",
            )
        locked.assignee = owner
        locked.save(update_fields=["assignee", "updated_at"])
        return {"from": previous, "to": new}

    return _change(incident, user, "assign", "incident.assigned", change)


def resolve(incident: Incident, user: User, note: str = "") -> Incident:
    """Resolve an active `incident` by hand, with an optional note; audited as `incident.resolved`."""
    text = _note(note)

    def change(locked: Incident, actor: AbstractBaseUser) -> dict[str, Any]:
        _require_active(locked, "resolved")
        locked.status = Incident.Status.RESOLVED
        locked.resolved_at = timezone.now()
        locked.save(update_fields=["status", "resolved_at", "updated_at"])
        return {"reason": "resolved by hand", "note": text} if text else {"reason": "resolved by hand"}

    return _change(incident, user, "resolve", "incident.resolved", change)


def reopen(incident: Incident, user: User, note: str = "") -> Incident:
    """Reopen a resolved `incident` (its acknowledgement cleared); audited as `incident.reopened`."""
    text = _note(note)

    def change(locked: Incident, actor: AbstractBaseUser) -> dict[str, Any]:
        if locked.status != Incident.Status.RESOLVED:
            raise WorkflowError(
                WorkflowError.WRONG_STATE,
                f"only a resolved incident can be reopened (this one is {locked.status})",
            )
        other = (
            Incident.objects.filter(
                source=locked.source, group_key=locked.group_key, status__in=Incident.ACTIVE
            )
            .exclude(pk=locked.pk)
            .values_list("pk", flat=True)
            .first()
        )
        if other is not None:
            raise WorkflowError(
                WorkflowError.WRONG_STATE,
                f"incident {other} of the same alert group is active: continue there instead",
            )
        locked.status = Incident.Status.OPEN
        locked.resolved_at = None
        locked.acknowledged_at = None
        locked.acknowledged_by = None
        locked.save(
            update_fields=["status", "resolved_at", "acknowledged_at", "acknowledged_by", "updated_at"]
        )
        return {"note": text} if text else {}

    return _change(incident, user, "reopen", "incident.reopened", change)


# --- internals ---------------------------------------------------------------------------------------


def _change(
    incident: Incident,
    user: User,
    doing: str,
    verb: str,
    apply: Callable[[Incident, AbstractBaseUser], dict[str, Any]],
) -> Incident:
    """Check the role, lock the incident, `apply` the change and audit it; a refusal is audited as
    `incident.<doing>_refused` and raised."""
    actor = user if isinstance(user, AbstractBaseUser) else None
    try:
        if actor is None or not has_role(actor, Role.RESPONDER):
            raise WorkflowError(
                WorkflowError.FORBIDDEN, f"only a {Role.RESPONDER.value} (or higher) may {doing} an incident"
            )
        with transaction.atomic():
            locked = Incident.objects.select_for_update().get(pk=incident.pk)
            detail = apply(locked, actor)
            record_audit(verb, locked, actor=actor, detail=detail)
    except WorkflowError as exc:
        record_audit(
            f"incident.{doing}_refused",
            incident,
            actor=actor,
            actor_label="" if actor else "anonymous",
            detail={"code": exc.code, "message": exc.message},
        )
        raise
    incident.refresh_from_db()
    return incident


def _require_active(incident: Incident, done: str) -> None:
    if incident.status not in Incident.ACTIVE:
        raise WorkflowError(
            WorkflowError.WRONG_STATE, f"a {incident.status} incident cannot be {done}: reopen it first"
        )


def _note(note: object) -> str:
    if not isinstance(note, str):
        raise WorkflowError(WorkflowError.INVALID, "a note must be text", field="note")
    text = note.strip()
    if len(text) > NOTE_MAX_LENGTH:
        raise WorkflowError(
            WorkflowError.INVALID, f"a note is at most {NOTE_MAX_LENGTH:,} characters", field="note"
        )
    return text
