"""Recovery guidance on constructed incidents that end with no confident root cause."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rca.core.guidance import FailureAnchor, Operation
from rca.investigation.document import document_of
from rca.investigation.engine import EngineConfig, investigate
from rca.investigation.recovery import EXTRA_TURNS, WIDEN_FACTOR, RerunPlan
from rca.telemetry.model import TelemetryError, TimeWindow
from tests.unit.investigation.scenario import build, propagate_latency

CHAIN = [("frontend", "checkout"), ("checkout", "payment"), ("payment", "db"), ("frontend", "catalog")]


def cpu_in_payment() -> dict[tuple[str, str], float]:
    faults = propagate_latency(["payment", "checkout", "frontend"], 3.0)
    faults[("payment", "cpu")] = 4.0
    return faults


def test_a_confident_conclusion_carries_no_guidance() -> None:
    source, alert = build(CHAIN, cpu_in_payment())
    result = investigate(source, alert)
    assert result.exit == "confident"
    assert result.guidance is None
    assert document_of(result).to_json()["guidance"] is None


def test_nothing_deviating_suggests_a_wider_window_on_the_symptom() -> None:
    source, alert = build(CHAIN, {})
    guidance = investigate(source, alert).guidance
    assert guidance is not None
    assert guidance.anchor is FailureAnchor.NO_ANOMALY
    assert [(s.target, s.operation) for s in guidance.steps] == [("frontend", Operation.WIDEN_WINDOW)]


def test_a_spent_budget_points_at_the_suspects_it_did_not_reach() -> None:
    source, alert = build(CHAIN, cpu_in_payment())
    result = investigate(source, alert, EngineConfig(max_turns=0))
    guidance = result.guidance
    assert guidance is not None
    assert guidance.anchor is FailureAnchor.BUDGET_SPENT
    assert 0 < len(guidance.steps) <= 3
    assert guidance.steps[0].target == "payment"  # the top suspect
    assert all(s.operation is Operation.EXAMINE for s in guidance.steps)
    assert "not examined before the budget ran out" in guidance.steps[0].grounds
    # every target is an entity the result records
    assert {s.target for s in guidance.steps} <= set(result.subscores)


def test_two_alike_suspects_are_conflicting_evidence_to_examine() -> None:
    faults = {("payment", "cpu"): 4.0, ("catalog", "cpu"): 4.0}
    faults.update(propagate_latency(["payment", "checkout", "frontend", "catalog"], 2.0))
    source, alert = build(CHAIN, faults)
    result = investigate(source, alert)
    guidance = result.guidance
    assert guidance is not None
    assert guidance.anchor is FailureAnchor.CONFLICTING_EVIDENCE
    recorded = {e.summary for h in result.hypotheses for e in h.evidence}
    assert guidance.steps
    assert all(s.grounds in recorded for s in guidance.steps)  # each step traces to recorded evidence


@dataclass
class FailingMetrics:
    """A source whose metrics backend fails for one entity once the loop asks (seeding still reads)."""

    inner: Any
    entity: str
    calls: int = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def metrics(self, entity: str, window: TimeWindow, names: Any = None) -> Any:
        if entity == self.entity and names is not None:
            raise TelemetryError("prometheus", f"timed out for {entity}")
        return self.inner.metrics(entity, window, names)


def test_tool_failures_only_suggest_running_again() -> None:
    source, alert = build(CHAIN, {("payment", "cpu"): 4.0})
    result = investigate(FailingMetrics(source, "payment"), alert)  # type: ignore[arg-type]
    guidance = result.guidance
    assert guidance is not None
    assert guidance.anchor is FailureAnchor.TOOL_FAILURES
    assert guidance.steps
    assert {s.operation for s in guidance.steps} == {Operation.RERUN}
    assert all("timed out" in s.grounds for s in guidance.steps)


def test_a_rerun_plan_applies_what_a_rerun_can_do_by_itself() -> None:
    stored = {
        "anchor": "budget_spent",
        "steps": [
            {"target": "payment", "operation": "examine"},
            {"target": "frontend", "operation": "widen_window"},
            {"target": "frontend", "operation": "connect_modality"},
            "not a step",
        ],
    }
    plan = RerunPlan.from_guidance(stored)
    assert plan.examine_first == ("payment",)
    assert plan.extra_turns == EXTRA_TURNS
    assert plan.widen == WIDEN_FACTOR
    assert plan.applied == ("examine payment", "widen_window frontend")
    assert plan.priors() == {"payment": 1.0}
    assert RerunPlan.from_guidance({}) == RerunPlan()
