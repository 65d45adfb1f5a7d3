"""What the action page shows: the proposal, its evidence, what the viewer may do with it (the rules are
enforced by `rca.incidents.approvals`) and its audit trail."""

from __future__ import annotations

from typing import Any

from frontend.labels import TIER_LABELS
from frontend.ladder import ladder
from frontend.results import distinct_chain
from rca.core.actions import ActionTier
from rca.incidents.models import ActionProposal, AuditEvent
from rca.incidents.results import result_document


def action_review(proposal: ActionProposal, user: Any) -> dict[str, Any]:
    """The proposal, its evidence, what the user may do with it, and its audit trail."""
    from rca.actions.preview import preview, why_not_buildable
    from rca.incidents.approvals import Role, allowed_tier, has_role, tier_statement

    investigation = proposal.investigation
    ceiling = allowed_tier(proposal)
    proposed = ActionTier(proposal.tier)
    undecided = proposal.status == ActionProposal.Status.PROPOSED
    is_approver = has_role(user, Role.APPROVER)
    is_responder = has_role(user, Role.RESPONDER)
    # Why each tier the evidence allows cannot be built (checked without sending anything); notify
    # always can. The preview is of the highest tier allowed: what it would send, or what it lacks.
    unbuildable = {
        t: why_not_buildable(proposal, t) if undecided else None for t in ActionTier if ceiling.allows(t)
    }
    buildable = [t for t, why in unbuildable.items() if why is None]
    would = preview(proposal, ceiling) if undecided else None
    if would is not None and not would.buildable and ceiling in buildable:
        # What the repository holds rules it out (a manifest with nothing to change, say).
        unbuildable[ceiling] = would.reason
        buildable.remove(ceiling)
    selected = buildable[-1] if buildable else ActionTier.NOTIFY
    if not undecided:
        approve_block = f"This action was already {proposal.status}."
    elif not is_approver:
        approve_block = "Only an approver may approve an action."
    elif unbuildable.get(ceiling):
        approve_block = (
            f"Approving as {TIER_LABELS[ceiling.value]} is disabled: it cannot be built "
            f"({unbuildable[ceiling]})."
        )
    else:
        approve_block = ""
    trail = AuditEvent.objects.filter(
        target_type=ActionProposal._meta.label_lower, target_id=str(proposal.pk)
    ).order_by("-at", "-id")
    stored = document.to_json() if (document := result_document(investigation)) else {}
    return {
        "proposal": proposal,
        "investigation": investigation,
        "incident": investigation.incident,
        "ceiling": ceiling.value,
        "above_ceiling": not ceiling.allows(proposed),
        "tiers": [
            {
                "value": t.value,
                "label": TIER_LABELS[t.value],
                "allowed": ceiling.allows(t) and unbuildable.get(t) is None,
                "why_not": (
                    "above what the evidence allows"
                    if not ceiling.allows(t)
                    else f"cannot be built: {unbuildable[t]}"
                    if unbuildable.get(t)
                    else ""
                ),
                "default": t == selected,
            }
            for t in ActionTier
        ],
        "statement": tier_statement(investigation),
        "preview": would,
        "can_approve": undecided and is_approver,
        "approve_block": approve_block,
        "can_reject": undecided and is_responder,
        "reject_block": ""
        if undecided and is_responder
        else (
            f"This action was already {proposal.status}."
            if not undecided
            else "Only a responder or approver may reject."
        ),
        "chain": distinct_chain(document),
        "path": stored.get("path") or [],
        "ladder": ladder(investigation, ceiling.value),
        "trail": list(trail[:100]),
        "tier_labels": TIER_LABELS,
    }
