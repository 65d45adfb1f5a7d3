"""The outcome sentence and action title name the detail the hypothesis levels reached."""

from __future__ import annotations

from rca.investigation.document import ResultDocument
from rca.investigation.narrative import action_body, action_title, outcome_sentence

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


def test_the_action_body_lists_each_evidence_line_once() -> None:
    """A check recorded on a service's hypothesis and again on its finer ones is one line in the body."""
    item = {"tool": "metrics", "source": "metrics", "verdict": "supports", "summary": "carts cpu 97%"}
    other = {**item, "tool": "logs", "source": "logs", "summary": "carts: 40 timeouts"}
    document = CONFIDENT.model_copy(
        update={
            "chain": ResultDocument.model_validate(
                {
                    "chain": {
                        "grounding": "partially_grounded",
                        "evidence": [
                            {**item, "hypothesis": "h1"},
                            {**item, "hypothesis": "h1.cpu"},
                            {**other, "hypothesis": "h1"},
                            {**item, "hypothesis": "h1.cpu.instance"},
                        ],
                    }
                }
            ).chain
        }
    )
    body = action_body(document)
    assert body.count("carts cpu 97%") == 1
    assert body.count("carts: 40 timeouts") == 1
    assert body.index("carts cpu 97%") < body.index("carts: 40 timeouts")  # chain order kept
    assert [e.hypothesis for e in document.chain.distinct_evidence()] == ["h1", "h1"]
