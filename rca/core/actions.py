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
# Confidences are decided at the precision the pages and API show them (two decimals, the precision of
# the thresholds above): a capped confidence shown as 0.65 is at the patch threshold, never below it.
CONFIDENCE_DECIMALS = 2


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


def shown_confidence(confidence: float | None) -> float:
    """The confidence as it is shown and decided on: sanitized, rounded to CONFIDENCE_DECIMALS."""
    return round(sanitize_confidence(confidence), CONFIDENCE_DECIMALS)


def tier_for(confidence: float | None) -> ActionTier:
    """The tier a confidence reaches, decided on the confidence as shown (`shown_confidence`); lower
    bounds are inclusive: 0.40 is issue, 0.39 notify, and 0.6499 (shown 0.65) is patch."""
    value = shown_confidence(confidence)
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


THRESHOLDS: dict[ActionTier, float] = {
    ActionTier.NOTIFY: 0.0,
    ActionTier.ISSUE: ISSUE_AT,
    ActionTier.PATCH: PATCH_AT,
    ActionTier.PULL_REQUEST: PULL_REQUEST_AT,
}


def _words(tier: ActionTier) -> str:
    return tier.value.replace("_", " ")


@dataclass(frozen=True, slots=True)
class TierStatement:
    """The one statement of an incident's action tier: the tier, the confidence it was decided on, and
    why in one sentence (the threshold reached, and the ceiling when that is what holds it)."""

    tier: ActionTier
    confidence: float
    reached: ActionTier
    ceiling: ActionTier
    text: str


def state_tier(confidence: float | None, ceiling: ActionTier) -> TierStatement:
    """The tier an approver may approve up to: what the capped `confidence` reaches, held at `ceiling`
    (what the exit and grounding allow); the sentence names the boundary it was decided at."""
    value = shown_confidence(confidence)
    reached = tier_for(value)
    tier = lowest(reached, ceiling)
    shown = f"{value:.{CONFIDENCE_DECIMALS}f}"
    if reached is ActionTier.NOTIFY:
        why = f"capped confidence {shown} is below the issue threshold {ISSUE_AT:.2f}"
    else:
        why = f"capped confidence {shown} is at or above the {_words(reached)} threshold"
        why += f" {THRESHOLDS[reached]:.2f}"
    if tier is not reached:
        why += f", but the evidence allows at most {_words(ceiling)}"
    elif reached not in (ActionTier.NOTIFY, ActionTier.PULL_REQUEST):
        above = list(ActionTier)[reached.rank + 1]
        why += f" and below the {_words(above)} threshold {THRESHOLDS[above]:.2f}"
    return TierStatement(tier, value, reached, ceiling, f"Tier {_words(tier)}: {why}.")
