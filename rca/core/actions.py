"""The action ladder: how far a conclusion may escalate. Nothing here ever acts."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rca.core.gate import GateExit
from rca.core.grounding import CappedConfidence, Grounding, apply_cap, sanitize_confidence
from rca.core.hypotheses import Conclusion
from rca.core.modes import Mode

ISSUE_AT = 0.40
PATCH_AT = 0.65
PULL_REQUEST_AT = 0.85


class ActionTier(StrEnum):
    """Proposed action, in escalating order; a human approves every one and merges every PR."""

    NOTIFY = "notify"
    ISSUE = "issue"
    PATCH = "patch"
    PULL_REQUEST = "pull_request"

    @property
    def rank(self) -> int:
        """Position on the ladder, 0 for notify."""
        return list(ActionTier).index(self)

    def allows(self, other: ActionTier) -> bool:
        """True when ``other`` is at or below this tier."""
        return other.rank <= self.rank


def lowest(*tiers: ActionTier) -> ActionTier:
    """The least escalated of ``tiers`` (notify when none is given)."""
    return min(tiers, key=lambda t: t.rank, default=ActionTier.NOTIFY)


def tier_for(confidence: float | None) -> ActionTier:
    """The tier a confidence reaches; lower bounds are inclusive (0.40 is issue, 0.399 notify)."""
    value = sanitize_confidence(confidence)
    if value >= PULL_REQUEST_AT:
        return ActionTier.PULL_REQUEST
    if value >= PATCH_AT:
        return ActionTier.PATCH
    if value >= ISSUE_AT:
        return ActionTier.ISSUE
    return ActionTier.NOTIFY


class OutcomeKind(StrEnum):
    """The kind of conclusion, labelled so that "nothing proven" never looks like a weak guess."""

    ROOT_CAUSE = "root_cause"
    LOW_CONFIDENCE = "low_confidence"
    NO_CONFIDENT_ROOT_CAUSE = "no_confident_root_cause"


_GROUNDING_CEILING = {
    Grounding.GROUNDED: ActionTier.PULL_REQUEST,
    Grounding.PARTIALLY_GROUNDED: ActionTier.PATCH,
    Grounding.UNGROUNDED: ActionTier.ISSUE,
}


def names_root_cause(exit: GateExit | Conclusion) -> bool:
    """True for a confident exit or a validated conclusion; every other exit names nothing."""
    return exit in (GateExit.CONFIDENT, Conclusion.VALIDATED)


def max_allowed_tier(
    exit: GateExit | Conclusion, grounding: Grounding, cap_mode: Mode = Mode.ACTIVE
) -> ActionTier:
    """The highest tier anyone may approve for this conclusion.

    No confident root cause allows only notify; with the cap active, grounding sets the ceiling
    (ungrounded: issue, partially grounded: patch, grounded: pull request).
    """
    if not names_root_cause(exit):
        return ActionTier.NOTIFY
    return _GROUNDING_CEILING[grounding] if cap_mode.governs else ActionTier.PULL_REQUEST


@dataclass(frozen=True, slots=True)
class Outcome:
    """The mapped outcome of a run."""

    kind: OutcomeKind
    tier: ActionTier
    confidence: CappedConfidence

    @property
    def writes_root_cause_edge(self) -> bool:
        """Only a named root cause may be written as ROOT_CAUSED_BY."""
        return self.kind is not OutcomeKind.NO_CONFIDENT_ROOT_CAUSE


def map_outcome(
    exit: GateExit | Conclusion, confidence: float | None, grounding: Grounding, cap_mode: Mode
) -> Outcome:
    """Map a run's exit, self-reported confidence and grounding to an outcome kind and tier.

    The cap is computed either way and governs only in active mode. No confident root cause is
    always notify, whatever the confidence.
    """
    capped = apply_cap(confidence, grounding, cap_mode)
    if not names_root_cause(exit):
        return Outcome(OutcomeKind.NO_CONFIDENT_ROOT_CAUSE, ActionTier.NOTIFY, capped)
    tier = tier_for(capped.governing)
    kind = OutcomeKind.LOW_CONFIDENCE if tier is ActionTier.NOTIFY else OutcomeKind.ROOT_CAUSE
    return Outcome(kind, tier, capped)
