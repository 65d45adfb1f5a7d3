"""Human decisions on investigations: roles, approving or rejecting a proposed action, re-running.

Used by the API and the pages alike, so every rule is enforced here, on the server:

* roles are Django groups, each including the ones below it: viewer (read) < responder (re-run,
  reject) < approver (approve); a superuser counts as an approver;
* an action is approved only by an approver, only once (while it is still proposed), and only at or
  below `allowed_tier(proposal)`: the ceiling the evidence allows, which for an ungrounded conclusion
  is never patch or pull request, whatever the request asks for; and only when it can be built
  (`rca.actions.preview`: a repository, a citation or remedy, a manifest where it needs one);
* every decision, and every refused attempt at one, writes an AuditEvent;
* approving queues the execution (`queue_execution`); nothing is executed here;
* one live proposal per incident: a re-run supersedes the incident's undecided proposals, which can
  then no longer be approved;
* a re-run is refused while an investigation of the incident is queued or running, unless that one is
  stuck (its task lost, see `rca.incidents.outbox`): it is then abandoned for the re-run.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.utils import timezone

from rca.core.actions import ActionTier, TierStatement, lowest, max_allowed_tier, state_tier, tier_for
from rca.core.gate import GateExit
from rca.core.grounding import Grounding
from rca.incidents import outbox
from rca.incidents.investigations import queue_investigation
from rca.incidents.models import ActionProposal, Incident, Investigation
from rca.incidents.sending import registered
from rca.incidents.services import record_audit

EXECUTE_TASK = "rootline.execute_action"

User = AbstractBaseUser | AnonymousUser
T = TypeVar("T")


class Role(StrEnum):
    """A role is a Django group of the same name (created by migration incidents.0004_roles)."""

    VIEWER = "viewer"
    RESPONDER = "responder"
    APPROVER = "approver"

    @property
    def rank(self) -> int:
        """Position in the hierarchy, 0 for viewer."""
        return list(Role).index(self)


class ApprovalError(Exception):
    """A decision was refused; `code` is one of the class constants, `message` says why."""

    FORBIDDEN = "forbidden"
    ABOVE_ALLOWED_TIER = "above_allowed_tier"
    ALREADY_DECIDED = "already_decided"
    REASON_REQUIRED = "reason_required"
    ALREADY_RUNNING = "already_running"
    NO_GUIDANCE = "no_guidance"
    SUPERSEDED = "superseded"
    NOT_BUILDABLE = "not_buildable"

    def __init__(self, code: str, message: str, **detail: Any) -> None:
        self.code = code
        self.message = message
        self.detail = detail
        super().__init__(f"{code}: {message}")


# --- roles -------------------------------------------------------------------------------------------


def role_of(user: User | None) -> Role | None:
    """The highest role `user` holds (approver for a superuser), None for none or for anonymous."""
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    if getattr(user, "is_superuser", False):
        return Role.APPROVER
    cached: Role | str | None = getattr(user, "_rootline_role", "")
    if cached != "":  # one query per request, however many checks a view makes
        return cached  # type: ignore[return-value]
    names = set(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
    held = [role for role in Role if role.value in names]
    role = max(held, key=lambda r: r.rank) if held else None
    setattr(user, "_rootline_role", role)  # noqa: B010  (a per-request cache on the user object)
    return role


def has_role(user: User | None, role: Role) -> bool:
    """Whether `user` holds `role` or a higher one."""
    held = role_of(user)
    return held is not None and held.rank >= role.rank


def _require(user: User, role: Role, doing: str) -> None:
    if not has_role(user, role):
        article = "an" if role.value[:1] in "aeiou" else "a"
        raise ApprovalError(ApprovalError.FORBIDDEN, f"only {article} {role.value} (or higher) may {doing}")


# --- the ceiling -------------------------------------------------------------------------------------


def allowed_tier(proposal: ActionProposal) -> ActionTier:
    """The highest tier `proposal` may be approved at.

    The lowest of: the tier proposed; the ceiling stored with the proposal; and the ceiling derived
    again from the investigation's row (exit and grounding, with the cap always governing, and the
    tier the capped confidence reaches). Deriving it again means a proposal row edited by hand, or
    written by a shadow-mode (ablation) run, still cannot be approved above what the evidence allows.
    """
    investigation = proposal.investigation
    derived = evidence_ceiling(investigation)
    if investigation.exit == GateExit.CONFIDENT:
        derived = lowest(derived, tier_for(investigation.capped_confidence))
    return lowest(ActionTier(proposal.tier), ActionTier(proposal.max_allowed_tier), derived)


def evidence_ceiling(investigation: Investigation) -> ActionTier:
    """What the investigation's exit and grounding allow at most, with the cap always governing."""
    exit_ = (
        GateExit.CONFIDENT if investigation.exit == GateExit.CONFIDENT else GateExit.NO_CONFIDENT_ROOT_CAUSE
    )
    grounding = Grounding(investigation.grounding) if investigation.grounding else Grounding.UNGROUNDED
    return max_allowed_tier(exit_, grounding)


def tier_statement(investigation: Investigation) -> TierStatement:
    """The investigation's one tier statement (rca.core.actions.state_tier): the tier its capped
    confidence reaches, held at the evidence's ceiling, with the boundary it was decided at."""
    return state_tier(investigation.capped_confidence, evidence_ceiling(investigation))


# --- decisions ---------------------------------------------------------------------------------------


def approve(
    proposal: ActionProposal, user: User, reason: str, tier: ActionTier | None = None
) -> ActionProposal:
    """Approve `proposal` at `tier` (default: the tier proposed) and queue its execution.

    Raises `ApprovalError` (forbidden, reason_required, already_decided, above_allowed_tier); the
    refusal is audited. On success the proposal's `tier` becomes the approved tier (the tier proposed
    is kept in the audit event).
    """
    return _audited_refusal(
        "action.approval_refused", proposal, user, lambda: _approve(proposal, user, reason, tier)
    )


def reject(proposal: ActionProposal, user: User, reason: str) -> ActionProposal:
    """Reject `proposal` (responder or approver); raises `ApprovalError`, audited, when refused."""
    return _audited_refusal(
        "action.rejection_refused", proposal, user, lambda: _reject(proposal, user, reason)
    )


def request_rerun(investigation: Investigation, user: User, apply_guidance: bool = False) -> Investigation:
    """Queue a new investigation of the same incident (responder or approver); returns the new one.

    With `apply_guidance`, the new run applies this investigation's recovery guidance. Refused while
    an investigation of that incident is still queued or running, and when there is no guidance to apply.
    """

    def rerun() -> Investigation:
        _require(user, Role.RESPONDER, "re-run an investigation")
        if apply_guidance and not (investigation.guidance or {}).get("steps"):
            raise ApprovalError(
                ApprovalError.NO_GUIDANCE,
                f"investigation {investigation.pk} has no recovery guidance to apply",
            )
        with transaction.atomic():
            incident = Incident.objects.select_for_update().get(pk=investigation.incident_id)
            busy = incident.investigations.filter(
                status__in=(Investigation.Status.QUEUED, Investigation.Status.RUNNING)
            ).first()
            stuck = busy is not None and outbox.is_stuck(busy)
            if busy is not None and not stuck:
                raise ApprovalError(
                    ApprovalError.ALREADY_RUNNING,
                    f"investigation {busy.pk} of this incident is still {busy.status}",
                    investigation=busy.pk,
                )
            new = queue_investigation(incident, guidance_from=investigation if apply_guidance else None)
            if busy is not None:
                outbox.abandon(busy, replaced_by=new.pk)
                record_audit(
                    "investigation.abandoned",
                    busy,
                    actor=_actor(user),
                    detail={"was": busy.status, "replaced_by": new.pk},
                )
            _supersede(incident, new, user)
            record_audit(
                "investigation.rerun_requested",
                investigation,
                actor=_actor(user),
                detail={
                    "incident": incident.pk,
                    "new_investigation": new.pk,
                    "apply_guidance": apply_guidance,
                },
            )
            return new

    return _audited_refusal("investigation.rerun_refused", investigation, user, rerun)


def queue_execution(proposal: ActionProposal) -> bool:
    """Hand an approved proposal to the executor task (`rootline.execute_action`, which checks the
    approval again itself, see rca.actions); True when queued. Should the task not be registered in
    this process, the approval is recorded as pending execution: nothing pretends to have run it.
    """
    task = registered(EXECUTE_TASK)
    if task is None:
        record_audit(
            "action.execution_pending",
            proposal,
            actor_label="approvals",
            detail={"reason": f"no {EXECUTE_TASK} task is registered", "tier": proposal.tier},
        )
        return False
    record_audit("action.execution_queued", proposal, actor_label="approvals", detail={"tier": proposal.tier})
    transaction.on_commit(lambda: task.delay(proposal.pk))
    return True


# --- internals ---------------------------------------------------------------------------------------


def _supersede(incident: Incident, rerun: Investigation, user: User) -> None:
    """The incident's undecided proposals give way to the re-run's (audited, each)."""
    superseded = ActionProposal.objects.select_for_update().filter(
        investigation__incident=incident, status=ActionProposal.Status.PROPOSED
    )
    for proposal in superseded:
        proposal.status = ActionProposal.Status.SUPERSEDED
        proposal.superseded_by = rerun
        proposal.save(update_fields=["status", "superseded_by"])
        record_audit("action.superseded", proposal, actor=_actor(user), detail={"by_investigation": rerun.pk})


def _actor(user: User) -> AbstractBaseUser | None:
    return user if isinstance(user, AbstractBaseUser) else None


def _audited_refusal(verb: str, target: Any, user: User, decide: Callable[[], T]) -> T:
    """Run `decide`; if it raises ApprovalError, audit the refusal (outside the rolled-back work)."""
    try:
        return decide()
    except ApprovalError as exc:
        record_audit(
            verb,
            target,
            actor=_actor(user),
            actor_label="" if _actor(user) else "anonymous",
            detail={"code": exc.code, "message": exc.message, **exc.detail},
        )
        raise


def _reason(reason: str) -> str:
    text = (reason or "").strip()
    if not text:
        raise ApprovalError(ApprovalError.REASON_REQUIRED, "a reason is required")
    return text


def _locked_undecided(proposal: ActionProposal) -> ActionProposal:
    locked = ActionProposal.objects.select_for_update().select_related("investigation").get(pk=proposal.pk)
    if locked.status == ActionProposal.Status.SUPERSEDED:
        raise ApprovalError(
            ApprovalError.SUPERSEDED,
            f"this action was superseded: investigation {locked.superseded_by_id} re-ran the incident, "
            "and only its proposal may be decided",
            status=locked.status,
            superseded_by=locked.superseded_by_id,
        )
    if locked.status != ActionProposal.Status.PROPOSED:
        raise ApprovalError(
            ApprovalError.ALREADY_DECIDED,
            f"this action was already {locked.status}"
            + (f" by {locked.decided_by.get_username()}" if locked.decided_by else ""),
            status=locked.status,
        )
    return locked


def _approve(proposal: ActionProposal, user: User, reason: str, tier: ActionTier | None) -> ActionProposal:
    _require(user, Role.APPROVER, "approve an action")
    text = _reason(reason)
    with transaction.atomic():
        locked = _locked_undecided(proposal)
        ceiling = allowed_tier(locked)
        chosen = ActionTier(tier) if tier is not None else ActionTier(locked.tier)
        if not ceiling.allows(chosen):
            raise ApprovalError(
                ApprovalError.ABOVE_ALLOWED_TIER,
                f"{chosen.value} is above what the evidence allows ({ceiling.value}; grounding: "
                f"{locked.investigation.grounding or 'none'}, capped confidence: "
                f"{_confidence(locked.investigation.capped_confidence)})",
                requested_tier=chosen.value,
                allowed_tier=ceiling.value,
            )
        # Only an action that can be built is approved: never one bound to fail for want of a
        # repository, a citation or a manifest (rca.actions.preview; nothing is sent to check).
        from rca.actions.preview import why_not_buildable

        unbuildable = why_not_buildable(locked, chosen)
        if unbuildable is not None:
            raise ApprovalError(
                ApprovalError.NOT_BUILDABLE,
                f"a {chosen.value.replace('_', ' ')} cannot be built: {unbuildable}",
                requested_tier=chosen.value,
            )
        proposed = locked.tier
        _decide(locked, user, ActionProposal.Status.APPROVED, text, tier=chosen)
        record_audit(
            "action.approved",
            locked,
            actor=_actor(user),
            detail={
                "reason": text,
                "tier": chosen.value,
                "proposed_tier": proposed,
                "allowed_tier": ceiling.value,
            },
        )
        queue_execution(locked)
    proposal.refresh_from_db()
    return proposal


def _reject(proposal: ActionProposal, user: User, reason: str) -> ActionProposal:
    _require(user, Role.RESPONDER, "reject an action")
    text = _reason(reason)
    with transaction.atomic():
        locked = _locked_undecided(proposal)
        _decide(locked, user, ActionProposal.Status.REJECTED, text)
        record_audit(
            "action.rejected", locked, actor=_actor(user), detail={"reason": text, "tier": locked.tier}
        )
    proposal.refresh_from_db()
    return proposal


def _decide(
    proposal: ActionProposal, user: User, status: str, reason: str, tier: ActionTier | None = None
) -> None:
    proposal.status = status
    proposal.decided_by = _actor(user)  # type: ignore[assignment]
    proposal.decided_at = timezone.now()
    proposal.reason = reason
    fields = ["status", "decided_by", "decided_at", "reason"]
    if tier is not None:
        proposal.tier = tier.value
        fields.append("tier")
    proposal.save(update_fields=fields)


def _confidence(value: float | None) -> str:
    return "none" if value is None else f"{value:.2f}"
