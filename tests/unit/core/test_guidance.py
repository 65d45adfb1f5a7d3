"""Recovery guidance: the failure anchor and the deterministic guidance gate."""

from __future__ import annotations

import pytest

from rca.core.guidance import (
    MAX_STEPS,
    Facts,
    FailureAnchor,
    Guidance,
    NextStep,
    Operation,
    anchor_for,
    gate,
)

ALL = frozenset(Operation)


def facts(**overrides: object) -> Facts:
    base: dict[str, object] = {
        "failed_tool_calls": 0,
        "deviating_entities": 3,
        "contested_entities": 0,
        "budget_spent": False,
        "missing_modalities": (),
    }
    return Facts(**{**base, **overrides})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            {"examined_nothing": True, "failed_tool_calls": 2, "policy_failed": True},
            FailureAnchor.NOTHING_EXAMINED,
        ),
        ({"policy_failed": True, "failed_tool_calls": 2}, FailureAnchor.BUDGET_SPENT),
        ({"failed_tool_calls": 2, "deviating_entities": 0}, FailureAnchor.TOOL_FAILURES),
        ({"deviating_entities": 0, "budget_spent": True}, FailureAnchor.NO_ANOMALY),
        ({"contested_entities": 2, "budget_spent": True}, FailureAnchor.CONFLICTING_EVIDENCE),
        ({"contested_entities": 1}, FailureAnchor.INCONCLUSIVE_EVIDENCE),
        ({"budget_spent": True, "missing_modalities": ("logs",)}, FailureAnchor.BUDGET_SPENT),
        ({"missing_modalities": ("traces",)}, FailureAnchor.MISSING_MODALITY),
        ({}, FailureAnchor.INCONCLUSIVE_EVIDENCE),
    ],
)
def test_the_anchor_is_the_most_actionable_recorded_condition(
    overrides: dict[str, object], expected: FailureAnchor
) -> None:
    assert anchor_for(facts(**overrides)) is expected


def step(target: str = "payment", op: Operation = Operation.EXAMINE, **overrides: str) -> NextStep:
    fields = {"verify": "payment cpu deviates", "stop_when": "3 turns", "grounds": "cpu z=4"} | overrides
    return NextStep(target, op, **fields)


def test_the_gate_keeps_grounded_complete_steps_up_to_the_limit() -> None:
    proposed = [step(t) for t in ("payment", "cart", "db", "frontend")]
    kept, dropped = gate(FailureAnchor.BUDGET_SPENT, proposed, {"payment", "cart", "db", "frontend"}, ALL)
    assert [s.target for s in kept] == ["payment", "cart", "db"]
    assert len(kept) == MAX_STEPS
    assert dropped == (f"examine frontend: more than {MAX_STEPS} steps",)


def test_the_gate_drops_what_the_evidence_does_not_name_or_is_incomplete() -> None:
    proposed = [
        step("invented-service"),
        step("payment", verify=""),
        step("", grounds="x"),
        step("payment"),
        step("payment"),
        step("payment", Operation.CONNECT_MODALITY),
    ]
    kept, dropped = gate(FailureAnchor.CONFLICTING_EVIDENCE, proposed, {"payment"}, {Operation.EXAMINE})
    assert kept == (step("payment"),)
    assert [d.split(": ")[1] for d in dropped] == [
        "its target is not named by the recorded evidence",
        "incomplete (a target, a verification signal, a stop condition and its grounds are required)",
        "incomplete (a target, a verification signal, a stop condition and its grounds are required)",
        "a duplicate",
        "not an operation allowed for this anchor here",
    ]
    assert dropped[2].startswith("examine ?:")


def test_tool_failures_only_allow_running_again() -> None:
    proposed = [step("payment"), step("payment", Operation.RERUN)]
    kept, dropped = gate(FailureAnchor.TOOL_FAILURES, proposed, {"payment"}, ALL)
    assert [s.operation for s in kept] == [Operation.RERUN]
    assert len(dropped) == 1


def test_guidance_serialises() -> None:
    guidance = Guidance(FailureAnchor.NO_ANOMALY, "nothing deviated", (step(),), ("x: y",))
    assert guidance.to_dict() == {
        "anchor": "no_anomaly",
        "detail": "nothing deviated",
        "steps": [
            {
                "target": "payment",
                "operation": "examine",
                "verify": "payment cpu deviates",
                "stop_when": "3 turns",
                "grounds": "cpu z=4",
            }
        ],
        "dropped": ["x: y"],
    }
