"""The outcome sentence and action title name the detail the hypothesis levels reached."""

from __future__ import annotations

from rca.investigation.document import ResultDocument
from rca.investigation.narrative import action_title, outcome_sentence

CONFIDENT = ResultDocument.model_validate(
    {
        "exit": "confident",
        "root_cause": {"entity": "carts", "fault_kind": "cpu", "detail": "instance:carts-7d9f-x2"},
        "chain": {"grounding": "partially_grounded"},
    }
)


def test_the_sentence_names_the_kind_and_the_detail() -> None:
    assert outcome_sentence(CONFIDENT) == (
        "Confident: carts is the root cause (cpu, instance carts-7d9f-x2), partially grounded."
    )
    assert (
        action_title(CONFIDENT, "front-end")
        == "carts (cpu, instance carts-7d9f-x2) caused the front-end incident"
    )


def test_without_a_detail_the_kind_alone() -> None:
    for root in (
        {"entity": "carts", "fault_kind": "cpu", "detail": ""},
        {"entity": "carts", "fault_kind": "cpu"},
    ):
        document = CONFIDENT.model_copy(
            update={"root_cause": ResultDocument.model_validate({"root_cause": root}).root_cause}
        )
        assert outcome_sentence(document).startswith("Confident: carts is the root cause (cpu),")
