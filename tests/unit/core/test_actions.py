from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rca.core.actions import (
    ISSUE_AT,
    PATCH_AT,
    PULL_REQUEST_AT,
    ActionTier,
    OutcomeKind,
    lowest,
    map_outcome,
    max_allowed_tier,
    names_root_cause,
    shown_confidence,
    state_tier,
    tier_for,
)
from rca.core.gate import GateExit
from rca.core.grounding import Grounding
from rca.core.hypotheses import Conclusion
from rca.core.modes import Mode

N, IS, P, PR = ActionTier.NOTIFY, ActionTier.ISSUE, ActionTier.PATCH, ActionTier.PULL_REQUEST


def test_thresholds():
    assert (ISSUE_AT, PATCH_AT, PULL_REQUEST_AT) == (0.40, 0.65, 0.85)


@pytest.mark.parametrize(
    ("confidence", "tier"),
    [
        (0.0, N),
        (0.39, N),
        (0.3949, N),  # shown 0.39
        (0.399, IS),  # shown 0.40: decided as shown
        (0.40, IS),
        (0.64, IS),
        (0.6449, IS),
        (0.649, P),
        (0.65, P),
        (0.84, P),
        (0.8449, P),
        (0.849, PR),
        (0.85, PR),
        (1.0, PR),
        (math.nan, N),
        (None, N),
        (-1.0, N),
        (7.0, PR),
    ],
)
def test_tier_boundaries_are_inclusive(confidence, tier):
    assert tier_for(confidence) is tier


def test_tier_ordering_helpers():
    assert [t.rank for t in (N, IS, P, PR)] == [0, 1, 2, 3]
    assert PR.allows(P)
    assert P.allows(P)
    assert not IS.allows(P)
    assert lowest(PR, IS, P) is IS
    assert lowest() is N


def test_names_root_cause():
    assert names_root_cause(GateExit.CONFIDENT)
    assert names_root_cause(Conclusion.VALIDATED)
    for exit in (GateExit.NONE, GateExit.NO_CONFIDENT_ROOT_CAUSE, Conclusion.NO_CONFIDENT_ROOT_CAUSE):
        assert not names_root_cause(exit)


@pytest.mark.parametrize(
    "exit", [GateExit.NO_CONFIDENT_ROOT_CAUSE, GateExit.NONE, Conclusion.NO_CONFIDENT_ROOT_CAUSE]
)
@pytest.mark.parametrize("confidence", [0.0, 0.5, 0.99, 1.0])
@pytest.mark.parametrize("mode", list(Mode))
def test_no_confident_root_cause_is_always_notify(exit, confidence, mode):
    outcome = map_outcome(exit, confidence, Grounding.GROUNDED, mode)
    assert outcome.kind is OutcomeKind.NO_CONFIDENT_ROOT_CAUSE
    assert outcome.tier is N
    assert not outcome.writes_root_cause_edge
    assert max_allowed_tier(exit, Grounding.GROUNDED, mode) is N


@pytest.mark.parametrize(
    ("confidence", "grounding", "mode", "kind", "tier"),
    [
        (0.95, Grounding.GROUNDED, Mode.ACTIVE, OutcomeKind.ROOT_CAUSE, PR),
        (0.95, Grounding.PARTIALLY_GROUNDED, Mode.ACTIVE, OutcomeKind.ROOT_CAUSE, P),
        (0.95, Grounding.UNGROUNDED, Mode.ACTIVE, OutcomeKind.ROOT_CAUSE, IS),
        (0.95, Grounding.UNGROUNDED, Mode.SHADOW, OutcomeKind.ROOT_CAUSE, PR),  # shadow: raw governs
        (0.30, Grounding.GROUNDED, Mode.ACTIVE, OutcomeKind.LOW_CONFIDENCE, N),
        (math.nan, Grounding.GROUNDED, Mode.ACTIVE, OutcomeKind.LOW_CONFIDENCE, N),
    ],
)
def test_map_outcome_for_a_named_root_cause(confidence, grounding, mode, kind, tier):
    outcome = map_outcome(GateExit.CONFIDENT, confidence, grounding, mode)
    assert (outcome.kind, outcome.tier) == (kind, tier)
    assert outcome.writes_root_cause_edge
    assert outcome.confidence.mode is mode
    assert outcome.confidence.grounding is grounding


def test_max_allowed_tier_by_grounding():
    assert max_allowed_tier(GateExit.CONFIDENT, Grounding.GROUNDED) is PR
    assert max_allowed_tier(GateExit.CONFIDENT, Grounding.PARTIALLY_GROUNDED) is P
    assert max_allowed_tier(Conclusion.VALIDATED, Grounding.UNGROUNDED) is IS
    assert max_allowed_tier(GateExit.CONFIDENT, Grounding.UNGROUNDED, Mode.SHADOW) is PR


@settings(max_examples=500)
@given(st.floats(0.0, 1.0), st.sampled_from([GateExit.CONFIDENT, Conclusion.VALIDATED]))
def test_grounding_bounds_the_ladder_in_active_mode(confidence, exit):
    ungrounded = map_outcome(exit, confidence, Grounding.UNGROUNDED, Mode.ACTIVE)
    partial = map_outcome(exit, confidence, Grounding.PARTIALLY_GROUNDED, Mode.ACTIVE)
    grounded = map_outcome(exit, confidence, Grounding.GROUNDED, Mode.ACTIVE)
    assert ungrounded.tier.rank < P.rank
    assert partial.tier.rank < PR.rank
    assert grounded.tier is tier_for(confidence)
    for outcome, grounding in ((ungrounded, Grounding.UNGROUNDED), (partial, Grounding.PARTIALLY_GROUNDED)):
        assert max_allowed_tier(exit, grounding).allows(outcome.tier)


@settings(max_examples=300)
@given(
    st.floats(allow_nan=True, allow_infinity=True) | st.none(),
    st.sampled_from(list(Grounding)),
    st.sampled_from(list(Mode)),
    st.sampled_from([*GateExit, *Conclusion]),
)
def test_map_outcome_is_total(confidence, grounding, mode, exit):
    outcome = map_outcome(exit, confidence, grounding, mode)
    assert max_allowed_tier(exit, grounding, mode).allows(outcome.tier)


@pytest.mark.parametrize("value", [0.6499999, 0.65, 0.650001])
def test_the_boundary_is_decided_on_the_confidence_as_shown(value):
    assert f"{shown_confidence(value):.2f}" == "0.65"
    assert tier_for(value) is P
    statement = state_tier(value, PR)
    assert statement.tier is P
    assert statement.text == (
        "Tier patch: capped confidence 0.65 is at or above the patch threshold 0.65 "
        "and below the pull request threshold 0.85."
    )


def test_one_statement_names_the_ceiling_when_it_holds_the_tier():
    statement = state_tier(0.70, IS)
    assert (statement.tier, statement.reached, statement.ceiling) == (IS, P, IS)
    assert statement.text == (
        "Tier issue: capped confidence 0.70 is at or above the patch threshold 0.65, "
        "but the evidence allows at most issue."
    )


def test_statement_below_every_threshold_and_at_the_top():
    below = "Tier notify: capped confidence 0.20 is below the issue threshold 0.40."
    assert state_tier(0.2, PR).text == below
    assert state_tier(None, PR).tier is N
    assert state_tier(0.9, PR).text == (
        "Tier pull request: capped confidence 0.90 is at or above the pull request threshold 0.85."
    )
