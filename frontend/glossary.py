"""One-line explanations of the safety core's terms, shown on hover wherever the pages use them."""

from __future__ import annotations

from rca.tools.stats import KNEE

GLOSSARY: dict[str, str] = {
    "clause": (
        "Which of the gate's four rules, applied in order, decided: 1 a validated hypothesis exits "
        "confident, 2 the budget is spent, 3 the policy asked to finish, 4 keep investigating."
    ),
    "prior": (
        "How likely the hypothesis looked before any tool evidence (its seeding score); only evidence "
        "validates it, never the prior."
    ),
    "grounding": (
        "Whether the conclusion rests on validating hard evidence and a cited change: grounded both, "
        "partially grounded one, ungrounded neither; it caps the confidence."
    ),
    "knee": (
        f"A robust z-score of {KNEE:g} (deviations from the baseline median in units of its spread): "
        "anything up to it is treated as noise."
    ),
}
