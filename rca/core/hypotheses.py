"""Hypotheses whose state is derived from evidence, and immutable tree snapshots."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from rca.core.evidence import Evidence, EvidenceSink, Verdict


class HypothesisState(StrEnum):
    """Derived state of a hypothesis; never set by anyone."""

    VALIDATED = "validated"
    INVALIDATED = "invalidated"
    INCONCLUSIVE = "inconclusive"


class Conclusion(StrEnum):
    """What a tree snapshot concludes."""

    VALIDATED = "validated"
    NO_CONFIDENT_ROOT_CAUSE = "no_confident_root_cause"


def derive_state(evidence: Iterable[Evidence]) -> HypothesisState:
    """The state an evidence list proves.

    Any validating item (hard ``supports`` from a behavioural lane) validates (it dominates
    refutation); otherwise any ``refutes``
    invalidates, whatever its source, so the model may downgrade but never upgrade; otherwise
    the hypothesis is inconclusive. Order does not matter.
    """
    has_hard_support = False
    has_refute = False
    for item in evidence:
        if item.validates:
            has_hard_support = True
        elif item.verdict is Verdict.REFUTES:
            has_refute = True
    if has_hard_support:
        return HypothesisState.VALIDATED
    if has_refute:
        return HypothesisState.INVALIDATED
    return HypothesisState.INCONCLUSIVE


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """A claim that ``entity`` is at fault with ``fault_kind``; ``prior`` is its seed score.

    ``detail`` narrows a fault-kind claim to what the evidence names (``instance:<pod>``,
    ``metric:<name>`` or ``change:<reference>``); empty above the detail level (`rca.core.levels`).
    """

    id: str
    entity: str
    fault_kind: str
    parent_id: str | None = None
    evidence: tuple[Evidence, ...] = ()
    prior: float = 0.0
    detail: str = ""

    @property
    def state(self) -> HypothesisState:
        """Derived from this hypothesis's own evidence only (children never roll up)."""
        return derive_state(self.evidence)

    @property
    def validating_evidence(self) -> tuple[Evidence, ...]:
        """The hard, supporting items: the only ones that count as proof."""
        return tuple(e for e in self.evidence if e.validates)


def _root_cause_rank(hypothesis: Hypothesis) -> tuple[float, int, float, str]:
    proof = hypothesis.validating_evidence
    # Higher seed score, then more hard supports, then the earliest proof, then id for determinism.
    return (-hypothesis.prior, -len(proof), min(e.observed_at for e in proof), hypothesis.id)


@dataclass(frozen=True, slots=True)
class HypothesisTree:
    """An immutable snapshot of every hypothesis at one moment of an investigation."""

    hypotheses: tuple[Hypothesis, ...] = ()

    def __post_init__(self) -> None:
        ids = [h.id for h in self.hypotheses]
        if len(ids) != len(set(ids)):
            raise ValueError("hypothesis ids must be unique")

    @classmethod
    def snapshot(cls, hypotheses: Iterable[Hypothesis], sink: EvidenceSink) -> HypothesisTree:
        """A fresh tree whose hypotheses carry exactly the evidence the sink holds for them."""
        return cls(tuple(replace(h, evidence=sink.evidence_for(h.id)) for h in hypotheses))

    @property
    def validated(self) -> tuple[Hypothesis, ...]:
        """Validated hypotheses, in tree order."""
        return tuple(h for h in self.hypotheses if h.state is HypothesisState.VALIDATED)

    @property
    def conclusion(self) -> Conclusion:
        """``VALIDATED`` iff some hypothesis passed the hard-evidence bar."""
        return Conclusion.VALIDATED if self.validated else Conclusion.NO_CONFIDENT_ROOT_CAUSE

    @property
    def root_cause(self) -> Hypothesis | None:
        """The validated hypothesis to name, or None.

        With several validated: the highest ``prior`` (seed score) wins, then the most hard
        supports, then the earliest validating evidence, then the smallest id.
        """
        return min(self.validated, key=_root_cause_rank, default=None)

    def get(self, hypothesis_id: str) -> Hypothesis | None:
        """The hypothesis with this id, if present."""
        return next((h for h in self.hypotheses if h.id == hypothesis_id), None)
