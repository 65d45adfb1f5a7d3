"""The verification gate: a pure function that decides whether an investigation may stop."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from rca.core.calibration import CalibrationMap
from rca.core.hypotheses import Hypothesis, HypothesisTree
from rca.core.modes import Mode

DEFAULT_MAX_TURNS = 10
DEFAULT_WALL_CLOCK_S = 240.0


@dataclass(frozen=True, slots=True)
class GateBudget:
    """Turn and wall-clock budget of the investigation loop."""

    max_turns: int = DEFAULT_MAX_TURNS
    wall_clock_s: float = DEFAULT_WALL_CLOCK_S


class GateState(StrEnum):
    """Where the investigation stands."""

    INVESTIGATING = "investigating"
    EVIDENCE_SUFFICIENT = "evidence_sufficient"
    BUDGET_EXHAUSTED = "budget_exhausted"
    NO_CONFIDENT_ROOT_CAUSE = "no_confident_root_cause"


class GateExit(StrEnum):
    """How the investigation exits, if it does."""

    NONE = "none"
    CONFIDENT = "confident"
    NO_CONFIDENT_ROOT_CAUSE = "no_confident_root_cause"


@dataclass(frozen=True, slots=True)
class GateDecision:
    """One gate evaluation. ``auto_remediates`` is always False: the gate concludes, never acts."""

    state: GateState
    exit: GateExit
    validated_count: int
    root_cause: Hypothesis | None
    clause: int
    reason: str
    auto_remediates: bool = False

    @property
    def stops(self) -> bool:
        """True when the decision ends the investigation."""
        return self.exit is not GateExit.NONE


def _validated(tree: HypothesisTree | None) -> tuple[tuple[Hypothesis, ...], Hypothesis | None]:
    if tree is None:
        return (), None
    try:
        return tree.validated, tree.root_cause
    except Exception:  # fail-open: a broken snapshot counts as nothing validated
        return (), None


def _exhausted(turns_used: int, elapsed_s: float, budget: GateBudget) -> bool:
    # An unmeasurable elapsed time cannot prove that budget remains.
    return turns_used >= budget.max_turns or math.isnan(elapsed_s) or elapsed_s >= budget.wall_clock_s


def evaluate(
    tree: HypothesisTree | None,
    wants_to_finish: bool,
    turns_used: int,
    elapsed_s: float,
    budget: GateBudget = GateBudget(),  # frozen, so sharing the default is safe
) -> GateDecision:
    """Apply the four clauses in their fixed order; the first that holds decides.

    1. something validated -> confident (even with the budget spent: evidence beats the budget);
    2. turns or wall clock spent -> no confident root cause;
    3. the policy asks to finish with nothing validated -> no confident root cause;
    4. otherwise keep investigating. A missing tree counts as zero validated.
    """
    validated, root_cause = _validated(tree)
    if validated:
        return GateDecision(
            GateState.EVIDENCE_SUFFICIENT,
            GateExit.CONFIDENT,
            len(validated),
            root_cause,
            1,
            f"{len(validated)} hypothesis(es) validated by hard tool evidence",
        )
    if _exhausted(turns_used, elapsed_s, budget):
        return GateDecision(
            GateState.BUDGET_EXHAUSTED,
            GateExit.NO_CONFIDENT_ROOT_CAUSE,
            0,
            None,
            2,
            f"budget spent ({turns_used}/{budget.max_turns} turns, "
            f"{elapsed_s:.1f}/{budget.wall_clock_s:.0f} s) with nothing validated",
        )
    if wants_to_finish:
        return GateDecision(
            GateState.NO_CONFIDENT_ROOT_CAUSE,
            GateExit.NO_CONFIDENT_ROOT_CAUSE,
            0,
            None,
            3,
            "the policy asked to finish but no hypothesis is validated",
        )
    return GateDecision(GateState.INVESTIGATING, GateExit.NONE, 0, None, 4, "keep investigating")


@dataclass(frozen=True, slots=True)
class CalibratedExit:
    """The exit after calibration and the calibrated probability it was judged by (None: no map)."""

    exit: GateExit
    probability: float | None


def calibrated_exit(
    exit: GateExit,
    calibration: CalibrationMap | None,
    scores: Mapping[str, float],
    mode: Mode = Mode.ACTIVE,
) -> CalibratedExit:
    """The conclusion's exit once calibrated: in active `mode`, a confident exit stays confident only when
    the map's probability for the run's `scores` (`rca.core.calibration.features`) reaches its threshold.

    Validated evidence is necessary, never sufficient: the map says how often runs scored like this
    one were right on data it was fitted on. In shadow mode the probability is computed and reported
    but the gate's exit stands; without a map the gate's exit stands and there is no probability.
    """
    if calibration is None:
        return CalibratedExit(exit, None)
    probability = calibration.apply(scores)
    withheld = exit is GateExit.CONFIDENT and not calibration.confident(scores, validated=True)
    if withheld and mode.governs:
        return CalibratedExit(GateExit.NO_CONFIDENT_ROOT_CAUSE, probability)
    return CalibratedExit(exit, probability)


def legacy_stop(wants_to_finish: bool, turns_used: int, budget: GateBudget) -> bool:
    """The stop rule the gate replaces: the model finishes, or the turn limit is reached."""
    return wants_to_finish or turns_used >= budget.max_turns


@dataclass(frozen=True, slots=True)
class LoopControl:
    """The gate's decision together with what actually governs the loop under ``mode``."""

    decision: GateDecision
    mode: Mode
    legacy_stop: bool

    @property
    def stop(self) -> bool:
        """Whether the loop stops: the gate decides in active mode, the legacy rule in shadow."""
        return self.decision.stops if self.mode.governs else self.legacy_stop


def control(
    tree: HypothesisTree | None,
    wants_to_finish: bool,
    turns_used: int,
    elapsed_s: float,
    budget: GateBudget,
    mode: Mode,
) -> LoopControl:
    """Evaluate the gate and the legacy stop; both are recorded, ``mode`` says which governs."""
    return LoopControl(
        evaluate(tree, wants_to_finish, turns_used, elapsed_s, budget),
        mode,
        legacy_stop(wants_to_finish, turns_used, budget),
    )
