from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rca.core.calibration import CalibrationMap
from rca.core.evidence import Source, Verdict
from rca.core.gate import (
    CalibratedExit,
    GateBudget,
    GateExit,
    GateState,
    calibrated_exit,
    control,
    evaluate,
    legacy_stop,
)
from rca.core.hypotheses import HypothesisTree
from rca.core.modes import Mode
from tests.unit.core.factories import ev, hyp

BUDGET = GateBudget()
VALIDATED = HypothesisTree((hyp("a", ev(Verdict.SUPPORTS)), hyp("b", ev(Verdict.REFUTES))))
NOTHING = HypothesisTree((hyp("a", ev(Verdict.REFUTES)), hyp("b", ev(Verdict.SUPPORTS, Source.LLM_INFERRED))))


def test_budget_defaults():
    assert (BUDGET.max_turns, BUDGET.wall_clock_s) == (10, 240.0)


def test_clause_1_validated_exits_confident():
    d = evaluate(VALIDATED, False, 3, 10.0, BUDGET)
    assert (d.state, d.exit, d.validated_count, d.clause) == (
        GateState.EVIDENCE_SUFFICIENT,
        GateExit.CONFIDENT,
        1,
        1,
    )
    assert d.root_cause is VALIDATED.root_cause
    assert d.stops
    assert not d.auto_remediates


@pytest.mark.parametrize(("turns", "elapsed"), [(10, 0.0), (0, 240.0), (10, 240.0), (99, 1e9)])
def test_clause_1_beats_the_budget(turns, elapsed):  # RISK-1: evidence wins at budget end
    d = evaluate(VALIDATED, True, turns, elapsed, BUDGET)
    assert d.exit is GateExit.CONFIDENT
    assert d.clause == 1


@pytest.mark.parametrize(
    ("turns", "elapsed", "exhausted"),
    [
        (9, 239.999, False),
        (10, 0.0, True),
        (0, 240.0, True),
        (11, 0.0, True),
        (0, 240.001, True),
        (0, math.inf, True),
    ],
)
def test_clause_2_budget_boundaries(turns, elapsed, exhausted):
    d = evaluate(NOTHING, False, turns, elapsed, BUDGET)
    if exhausted:
        assert (d.state, d.exit, d.clause) == (
            GateState.BUDGET_EXHAUSTED,
            GateExit.NO_CONFIDENT_ROOT_CAUSE,
            2,
        )
        assert d.validated_count == 0
        assert d.root_cause is None
        assert "budget spent" in d.reason
    else:
        assert d.state is GateState.INVESTIGATING


def test_clause_2_nan_elapsed_counts_as_spent():
    assert evaluate(None, False, 0, math.nan, BUDGET).state is GateState.BUDGET_EXHAUSTED


def test_clause_2_precedes_clause_3():
    assert evaluate(NOTHING, True, 10, 0.0, BUDGET).state is GateState.BUDGET_EXHAUSTED


def test_clause_3_model_finishes_with_nothing_validated():
    d = evaluate(NOTHING, True, 2, 30.0, BUDGET)
    assert (d.state, d.exit, d.clause) == (
        GateState.NO_CONFIDENT_ROOT_CAUSE,
        GateExit.NO_CONFIDENT_ROOT_CAUSE,
        3,
    )
    assert d.validated_count == 0
    assert d.root_cause is None


def test_clause_4_keep_investigating():
    d = evaluate(NOTHING, False, 2, 30.0, BUDGET)
    assert (d.state, d.exit, d.clause, d.stops) == (GateState.INVESTIGATING, GateExit.NONE, 4, False)


def test_null_and_empty_tree_count_as_zero_validated():
    assert evaluate(None, False, 0, 0.0, BUDGET).state is GateState.INVESTIGATING
    assert evaluate(None, True, 0, 0.0, BUDGET).state is GateState.NO_CONFIDENT_ROOT_CAUSE
    assert evaluate(HypothesisTree(), True, 0, 0.0).state is GateState.NO_CONFIDENT_ROOT_CAUSE
    assert evaluate(None, False, 10, 0.0, BUDGET).state is GateState.BUDGET_EXHAUSTED


class _BrokenTree:
    @property
    def validated(self):
        raise RuntimeError("snapshot failed")


def test_a_broken_tree_fails_open():
    d = evaluate(_BrokenTree(), False, 0, 0.0, BUDGET)  # type: ignore[arg-type]
    assert d.state is GateState.INVESTIGATING
    assert d.validated_count == 0


def test_custom_budget():
    small = GateBudget(max_turns=2, wall_clock_s=5)
    assert evaluate(None, False, 2, 0.0, small).state is GateState.BUDGET_EXHAUSTED
    assert evaluate(None, False, 1, 4.9, small).state is GateState.INVESTIGATING


trees = st.sampled_from([None, HypothesisTree(), NOTHING, VALIDATED, _BrokenTree()])
numbers = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**6), 10**6).map(float)


@settings(max_examples=500)
@given(
    trees,
    st.booleans(),
    st.integers(-(10**9), 10**9),
    numbers,
    st.integers(-5, 50),
    st.floats(allow_nan=True, allow_infinity=True),
)
def test_gate_never_raises_never_remediates_and_follows_the_order(
    tree, finish, turns, elapsed, max_turns, wall
):
    budget = GateBudget(max_turns, wall)
    d = evaluate(tree, finish, turns, elapsed, budget)
    assert d.auto_remediates is False
    assert d.clause in (1, 2, 3, 4)
    assert isinstance(d.reason, str)
    if tree is VALIDATED:
        assert d.exit is GateExit.CONFIDENT
    else:
        assert d.exit is not GateExit.CONFIDENT
        assert d.validated_count == 0
    assert d.stops is (d.exit is not GateExit.NONE)


@pytest.mark.parametrize(
    ("finish", "turns", "expected"),
    [(False, 0, False), (True, 0, True), (False, 10, True), (False, 9, False)],
)
def test_legacy_stop(finish, turns, expected):
    assert legacy_stop(finish, turns, BUDGET) is expected


def test_shadow_mode_records_the_gate_but_the_legacy_rule_governs():
    shadow = control(NOTHING, True, 2, 10.0, BUDGET, Mode.SHADOW)
    assert shadow.decision.state is GateState.NO_CONFIDENT_ROOT_CAUSE  # computed and recorded
    assert shadow.legacy_stop
    assert shadow.stop
    early = control(VALIDATED, False, 2, 10.0, BUDGET, Mode.SHADOW)
    assert early.decision.stops
    assert not early.stop


def test_active_mode_governs():
    active = control(VALIDATED, False, 2, 10.0, BUDGET, Mode.ACTIVE)
    assert active.stop
    assert not active.legacy_stop
    slow = control(NOTHING, False, 3, 240.0, BUDGET, Mode.ACTIVE)
    assert slow.stop
    assert not slow.legacy_stop


# --- the calibrated confident exit -------------------------------------------------------------

_MAP = CalibrationMap("top_score", (0.0, 2.0, 4.0), (0.2, 0.5, 0.97), threshold=0.9)


def test_calibrated_exit_keeps_a_confident_run_at_the_threshold():
    got = calibrated_exit(GateExit.CONFIDENT, _MAP, {"top_score": 5.0})
    assert got == CalibratedExit(GateExit.CONFIDENT, 0.97)


def test_calibrated_exit_withholds_a_validated_run_below_the_threshold():
    got = calibrated_exit(GateExit.CONFIDENT, _MAP, {"top_score": 2.0})
    assert got == CalibratedExit(GateExit.NO_CONFIDENT_ROOT_CAUSE, 0.5)


def test_calibrated_exit_never_makes_an_unvalidated_run_confident():
    got = calibrated_exit(GateExit.NO_CONFIDENT_ROOT_CAUSE, _MAP, {"top_score": 9.0})
    assert got == CalibratedExit(GateExit.NO_CONFIDENT_ROOT_CAUSE, 0.97)


def test_without_a_map_the_gate_exit_stands():
    assert calibrated_exit(GateExit.CONFIDENT, None, {}) == CalibratedExit(GateExit.CONFIDENT, None)


def test_in_shadow_the_calibration_reports_but_does_not_decide():
    got = calibrated_exit(GateExit.CONFIDENT, _MAP, {"top_score": 2.0}, Mode.SHADOW)
    assert got == CalibratedExit(GateExit.CONFIDENT, 0.5)
