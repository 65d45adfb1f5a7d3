"""Recovery guidance for a "no confident root cause" exit: the failure anchor and the guidance gate
(after PROBE: anchor first, then at most a few bounded next steps, each traced to recorded evidence).

The anchor says where the investigation became stuck. Next steps are proposed from the run's own
records; the gate keeps only steps that are complete (a target, an operation, the signal that would
verify it and when to stop), whose target the recorded evidence names and whose operation this
installation can carry out. When the anchor is an infrastructure condition (tools failing), only the
conservative step of running again once the backend answers is allowed. Confidence plays no part.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

MAX_STEPS = 3


class FailureAnchor(StrEnum):
    """Where an investigation that could not conclude got stuck."""

    NOTHING_EXAMINED = "nothing_examined"  # no telemetry answered: none configured, or all unreachable
    TOOL_FAILURES = "tool_failures"
    NO_ANOMALY = "no_anomaly"
    CONFLICTING_EVIDENCE = "conflicting_evidence"
    BUDGET_SPENT = "budget_spent"
    MISSING_MODALITY = "missing_modality"
    INCONCLUSIVE_EVIDENCE = "inconclusive_evidence"  # deviations seen, every examination undecided


class Operation(StrEnum):
    """What a next step does; the first three a re-run can apply by itself."""

    EXAMINE = "examine"  # investigate this entity first, with every tool
    WIDEN_WINDOW = "widen_window"  # look further back and forward around the onset
    RERUN = "rerun"  # the same investigation again, once a failing backend answers
    CONNECT_MODALITY = "connect_modality"  # an operator adds a telemetry source


# Infrastructure conditions get no corrective guidance, only a conservative retry (PROBE's scope rule).
_INFRASTRUCTURE = {
    FailureAnchor.TOOL_FAILURES: frozenset({Operation.RERUN}),
    FailureAnchor.NOTHING_EXAMINED: frozenset({Operation.RERUN, Operation.CONNECT_MODALITY}),
}


@dataclass(frozen=True, slots=True)
class Facts:
    """What the anchor is chosen from, all counted from the run's records."""

    failed_tool_calls: int
    deviating_entities: int
    contested_entities: int  # deviating, examined, and left undecided
    budget_spent: bool
    missing_modalities: tuple[str, ...]
    policy_failed: bool = False  # the language-model policy hit its token or cost budget and failed closed
    examined_nothing: bool = False  # no series was read and no tool call answered


def anchor_for(facts: Facts) -> FailureAnchor:
    """The failure anchor, most actionable first; inconclusive evidence when nothing sharper holds.

    A policy that failed closed stopped the run whatever the evidence showed: its budget is the anchor.
    """
    if facts.examined_nothing:
        return FailureAnchor.NOTHING_EXAMINED  # never "no anomaly": no telemetry was there to show one
    if facts.policy_failed:
        return FailureAnchor.BUDGET_SPENT
    if facts.failed_tool_calls:
        return FailureAnchor.TOOL_FAILURES
    if facts.deviating_entities == 0:
        return FailureAnchor.NO_ANOMALY
    if facts.contested_entities >= 2:
        return FailureAnchor.CONFLICTING_EVIDENCE
    if facts.budget_spent:
        return FailureAnchor.BUDGET_SPENT
    if facts.missing_modalities:
        return FailureAnchor.MISSING_MODALITY
    return FailureAnchor.INCONCLUSIVE_EVIDENCE


@dataclass(frozen=True, slots=True)
class NextStep:
    """One bounded step: what to do to which entity, what would verify it and when to give up.

    `grounds` is the recorded fact the step derives from (an evidence summary, a tool failure).
    """

    target: str
    operation: Operation
    verify: str
    stop_when: str
    grounds: str

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {
            "target": self.target,
            "operation": self.operation.value,
            "verify": self.verify,
            "stop_when": self.stop_when,
            "grounds": self.grounds,
        }


@dataclass(frozen=True, slots=True)
class Guidance:
    """The anchor of a run that could not conclude and the steps that passed the gate."""

    anchor: FailureAnchor
    detail: str
    steps: tuple[NextStep, ...]
    dropped: tuple[str, ...] = ()  # why proposed steps were not kept

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "anchor": self.anchor.value,
            "detail": self.detail,
            "steps": [s.to_dict() for s in self.steps],
            "dropped": list(self.dropped),
        }


def gate(
    anchor: FailureAnchor,
    proposed: Sequence[NextStep],
    recorded_entities: Collection[str],
    operations: Collection[Operation],
) -> tuple[tuple[NextStep, ...], tuple[str, ...]]:
    """The steps that may be offered (at most MAX_STEPS, in proposal order) and why the rest were not."""
    allowed = _INFRASTRUCTURE.get(anchor, frozenset(operations)) & frozenset(operations)
    kept: list[NextStep] = []
    dropped: list[str] = []
    for step in proposed:
        reason = _refusal(step, recorded_entities, allowed, kept)
        if reason is None and len(kept) >= MAX_STEPS:
            reason = f"more than {MAX_STEPS} steps"
        if reason is None:
            kept.append(step)
        else:
            dropped.append(f"{step.operation.value} {step.target or '?'}: {reason}")
    return tuple(kept), tuple(dropped)


def _refusal(
    step: NextStep, recorded: Collection[str], allowed: Collection[Operation], kept: Sequence[NextStep]
) -> str | None:
    if not (step.target and step.verify and step.stop_when and step.grounds):
        return "incomplete (a target, a verification signal, a stop condition and its grounds are required)"
    if step.target not in recorded:
        return "its target is not named by the recorded evidence"
    if step.operation not in allowed:
        return "not an operation allowed for this anchor here"
    if step in kept:
        return "a duplicate"
    return None
