"""Recovery guidance for an investigation that could not conclude: the facts counted from its records,
the failure anchor, the next steps proposed from those records, and the core's guidance gate.

Every proposed step names an entity and a fact the run recorded (an evidence summary, a failed tool
call, a modality the source lacks); the gate in `rca.core.guidance` drops any that do not. A re-run
can apply the steps a re-run can carry out by itself (see `RerunPlan`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rca.core.evidence import Evidence, Verdict
from rca.core.gate import GateState
from rca.core.guidance import Facts, FailureAnchor, Guidance, NextStep, Operation, anchor_for, gate
from rca.core.hypotheses import HypothesisState, HypothesisTree
from rca.investigation.seed import Suspect
from rca.telemetry.model import Modality
from rca.tools.base import FAILED, MEASUREMENT_PREFIX
from rca.tools.facts import RunFacts

# What a re-run that applies guidance adds: turns for the steps to examine, and how much wider the
# incident window gets for a widen step.
EXTRA_TURNS = 5
WIDEN_FACTOR = 2.0
# Suspects whose seeding scores the result records (InvestigationResult.subscores).
SEEDS_RECORDED = 10
# The modalities whose absence is worth a step (metrics and events come with every source here).
_WORTH_CONNECTING = (Modality.LOGS, Modality.TRACES)


def _failed(e: Evidence) -> bool:
    return bool(e.signals.get(MEASUREMENT_PREFIX + FAILED))


def guidance_for(
    run: RunFacts,
    tree: HypothesisTree,
    state: GateState,
    suspects: Sequence[Suspect],
    policy_failed: bool = False,
) -> Guidance:
    """The guidance of a run that ended with no confident root cause (`policy_failed`: the policy
    failed closed at its budget)."""
    records = [(h.entity, e) for h in tree.hypotheses for e in h.evidence]
    failures = [(entity, e) for entity, e in records if _failed(e)]
    contested = _contested(run, tree)
    deviating = [s.entity for s in suspects if run.observe(s.entity).deviates]
    missing = tuple(m.value for m in _WORTH_CONNECTING if m not in run.modalities)
    facts = Facts(
        failed_tool_calls=len(failures),
        deviating_entities=len(deviating),
        contested_entities=len(contested),
        budget_spent=state is GateState.BUDGET_EXHAUSTED,
        missing_modalities=missing,
        policy_failed=policy_failed,
        # No series was read and no tool answered: no backend configured, every one failed, or no entity to
        # examine (no topology). Saying "no anomaly" then would claim a look that never happened.
        examined_nothing=not any(run.series.values()) and all(_failed(e) for _, e in records),
    )
    anchor = anchor_for(facts)
    symptom = run.symptom
    examined = {entity for entity, _ in records}
    # Seeding's anomaly scores are part of the result (its subscores), so a suspect left unexamined
    # is a recorded fact as well.
    unexamined = {s.entity: s for s in suspects[:SEEDS_RECORDED] if s.entity not in examined}
    proposed = _proposals(anchor, symptom, failures, contested, _undecided(tree), missing)
    if anchor is FailureAnchor.BUDGET_SPENT:
        proposed += [_examine_suspect(s) for s in unexamined.values()]
    recorded = examined | set(unexamined) | {symptom}  # the alert itself is a recorded fact
    steps, dropped = gate(anchor, proposed, recorded, frozenset(Operation))
    return Guidance(anchor, _detail(anchor, facts), steps, dropped)


def _examine_suspect(suspect: Suspect) -> NextStep:
    """Examine a suspect the budget did not reach."""
    return NextStep(
        suspect.entity,
        Operation.EXAMINE,
        verify=f"a tool result that decides a {suspect.fault_kind.value} fault in {suspect.entity}",
        stop_when=f"{EXTRA_TURNS} more turns without a decision",
        grounds=f"seeded at anomaly score {suspect.score:.2f} and not examined before the budget ran out",
    )


def _contested(run: RunFacts, tree: HypothesisTree) -> dict[str, Evidence]:
    """Entities that deviate and were examined without a decision, each with its most telling record
    (supporting evidence first): several of them are rivals the tools could not separate."""
    out: dict[str, Evidence] = {}
    for h in tree.hypotheses:
        if h.state in (HypothesisState.VALIDATED, HypothesisState.INVALIDATED) or not h.evidence:
            continue
        if not run.observe(h.entity).deviates:
            continue
        best = next((e for e in h.evidence if e.verdict is Verdict.SUPPORTS), h.evidence[0])
        if h.entity not in out or best.verdict is Verdict.SUPPORTS:
            out[h.entity] = best
    return out


def _undecided(tree: HypothesisTree) -> dict[str, Evidence]:
    """Entities examined without a decision (neither validated nor invalidated), with their evidence."""
    out: dict[str, Evidence] = {}
    for h in tree.hypotheses:
        if h.state in (HypothesisState.VALIDATED, HypothesisState.INVALIDATED) or not h.evidence:
            continue
        out.setdefault(h.entity, h.evidence[0])
    return out


def _proposals(
    anchor: FailureAnchor,
    symptom: str,
    failures: Sequence[tuple[str, Evidence]],
    contested: Mapping[str, Evidence],
    undecided: Mapping[str, Evidence],
    missing: Sequence[str],
) -> list[NextStep]:
    if anchor is FailureAnchor.NOTHING_EXAMINED:
        return [
            NextStep(
                symptom,
                Operation.CONNECT_MODALITY if not failures else Operation.RERUN,
                verify=f"a telemetry backend answers with series of {symptom}",
                stop_when="the backends answer and the run still examines nothing: check their labels",
                grounds=failures[0][1].summary if failures else "no telemetry backend is configured",
            )
        ]
    if anchor is FailureAnchor.TOOL_FAILURES:
        return [
            NextStep(
                entity,
                Operation.RERUN,
                verify=f"the {e.tool} tool answers for {entity}",
                stop_when="the backend fails again: fix its connection before running again",
                grounds=e.summary,
            )
            for entity, e in failures
        ]
    if anchor is FailureAnchor.NO_ANOMALY:
        return [
            NextStep(
                symptom,
                Operation.WIDEN_WINDOW,
                verify=f"a metric of {symptom} or a neighbour deviating beyond its baseline knee",
                stop_when=f"nothing deviates in a window {WIDEN_FACTOR:g}x as wide: treat the alert as noise",
                grounds=f"no entity deviated beyond the knee; the alert named {symptom}",
            )
        ]
    if anchor is FailureAnchor.CONFLICTING_EVIDENCE:
        return [
            NextStep(
                entity,
                Operation.EXAMINE,
                verify=f"{entity}'s deviation starts before the others' and is its own, not its callees'",
                stop_when="the evidence still supports more than one: report them as joint candidates",
                grounds=e.summary,
            )
            for entity, e in contested.items()
        ]
    if anchor is FailureAnchor.BUDGET_SPENT:
        return [
            NextStep(
                entity,
                Operation.EXAMINE,
                verify=f"a tool result that validates or refutes a fault in {entity}",
                stop_when=f"{EXTRA_TURNS} more turns without a decision",
                grounds=e.summary,
            )
            for entity, e in {**contested, **undecided}.items()
        ]
    if anchor is FailureAnchor.MISSING_MODALITY:
        return [
            NextStep(
                symptom,
                Operation.CONNECT_MODALITY,
                verify=f"the {modality} tool returns a verdict about {symptom}",
                stop_when=f"{modality} for {symptom} are not collected anywhere",
                grounds=f"the telemetry source offers no {modality}",
            )
            for modality in missing
        ]
    examined: dict[str, Evidence | None] = {**undecided} or {symptom: None}
    return [
        NextStep(
            entity,
            Operation.WIDEN_WINDOW,
            verify=f"{entity}'s deviation stands out, or fades, against a {WIDEN_FACTOR:g}x wider window",
            stop_when="still inconclusive: its tools can't decide from this telemetry; look at it by hand",
            grounds=e.summary if e is not None else f"deviations were found; the alert named {symptom}",
        )
        for entity, e in examined.items()
    ]


def _detail(anchor: FailureAnchor, facts: Facts) -> str:
    return {
        FailureAnchor.NOTHING_EXAMINED: (
            "nothing was examined: no telemetry backend answered"
            + (
                f" ({facts.failed_tool_calls} tool call(s) failed)"
                if facts.failed_tool_calls
                else " (none configured)"
            )
        ),
        FailureAnchor.TOOL_FAILURES: f"{facts.failed_tool_calls} tool call(s) failed against their backend",
        FailureAnchor.NO_ANOMALY: "no entity deviated beyond its baseline knee",
        FailureAnchor.CONFLICTING_EVIDENCE: (
            f"{facts.contested_entities} deviating entities were examined and none could be told apart"
        ),
        FailureAnchor.BUDGET_SPENT: (
            "the policy's token or cost budget ran out, so it failed closed"
            if facts.policy_failed
            else "the turn or time budget ran out before a hypothesis was proven"
        ),
        FailureAnchor.MISSING_MODALITY: "the source lacks " + " and ".join(facts.missing_modalities),
        FailureAnchor.INCONCLUSIVE_EVIDENCE: (
            f"{facts.deviating_entities} entities deviated, and every examination was inconclusive"
        ),
    }[anchor]


@dataclass(frozen=True)
class RerunPlan:
    """How a re-run applies stored guidance: which entities to examine first, more turns, a wider window."""

    examine_first: tuple[str, ...] = ()
    extra_turns: int = 0
    widen: float = 1.0
    applied: tuple[str, ...] = field(default=())  # the steps applied, as "operation target"

    @classmethod
    def from_guidance(cls, stored: Mapping[str, Any]) -> RerunPlan:
        """The plan for the steps of stored guidance (`Guidance.to_dict`) that a re-run can apply."""
        steps = [s for s in stored.get("steps", ()) if isinstance(s, Mapping)]
        examine = tuple(str(s["target"]) for s in steps if s.get("operation") == Operation.EXAMINE.value)
        widen = any(s.get("operation") == Operation.WIDEN_WINDOW.value for s in steps)
        runnable = {Operation.EXAMINE.value, Operation.WIDEN_WINDOW.value, Operation.RERUN.value}
        return cls(
            examine_first=examine,
            extra_turns=EXTRA_TURNS if examine else 0,
            widen=WIDEN_FACTOR if widen else 1.0,
            applied=tuple(f"{s['operation']} {s['target']}" for s in steps if s.get("operation") in runnable),
        )

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (stored with the re-run, so a reader sees what it changed)."""
        return {
            "examine_first": list(self.examine_first),
            "extra_turns": self.extra_turns,
            "widen": self.widen,
            "applied": list(self.applied),
        }

    def priors(self) -> dict[str, float]:
        """Seeding priors that put the entities to examine first at the front (a nudge, not evidence)."""
        return dict.fromkeys(self.examine_first, 1.0)
