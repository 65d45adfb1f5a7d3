"""Policies: who picks the next step of the loop. They never decide what is proven.

A policy sees a read-only view of the loop (hypotheses with their derived states, the frontier in
priority order, what was visited) and returns the next action or None when it wants to finish. It
also rates its confidence in a conclusion; that number is capped by grounding before it can choose
an action tier. The offline policy is deterministic and statistics-driven; a language-model policy
implements the same interface.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from rca.core.hypotheses import Hypothesis, HypothesisState, HypothesisTree
from rca.investigation.result import Belief

ANTHROPIC = "anthropic"  # the language-model policy's name (rca.investigation.anthropic_policy)


@dataclass(frozen=True)
class Action:
    """Examine one hypothesis with these tools."""

    hypothesis: Hypothesis
    tools: tuple[str, ...]
    rationale: str


@dataclass(frozen=True)
class LoopView:
    """What a policy may see of the loop."""

    tree: HypothesisTree
    frontier: Sequence[tuple[float, Hypothesis]]  # unvisited hypotheses, highest priority first
    visited: frozenset[str]
    beliefs: Mapping[str, Belief]
    tools: tuple[str, ...]  # tools available for this incident
    turns_used: int


class Policy(Protocol):
    """Chooses steps and rates confidence; has no say over hypothesis states or stopping."""

    name: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    failure: str | None  # why the policy failed closed; the conclusion then names no root cause
    notes: tuple[str, ...]  # what happened to the policy itself (retries, rejected calls, fallback)

    def choose(self, view: LoopView) -> Action | None:
        """The next action, or None to finish."""
        ...

    def confidence(self, tree: HypothesisTree, named: Hypothesis | None, margin: float) -> float:
        """Self-rated confidence in [0, 1] that `named` is the root cause."""
        ...


# The offline policy's confidence: a floor for a validated root cause, more for each independent
# telemetry lane that supports it and for a clear lead over the runner-up, never certainty.
BASE_CONFIDENCE = 0.55
PER_EXTRA_SOURCE = 0.1
MARGIN_WEIGHT = 0.25
MAX_CONFIDENCE = 0.95


class OfflinePolicy:
    """Deterministic: examine the highest-priority unvisited hypothesis with every available tool."""

    name = "offline"
    tokens_in = 0
    tokens_out = 0
    cost_usd = 0.0
    failure: str | None = None
    notes: tuple[str, ...] = ()

    def choose(self, view: LoopView) -> Action | None:
        """The top of the frontier; finish when it is empty."""
        if not view.frontier:
            return None
        priority, hypothesis = view.frontier[0]
        return Action(
            hypothesis,
            view.tools,
            f"highest priority ({priority:.3g}) unvisited: {hypothesis.entity} {hypothesis.fault_kind}",
        )

    def confidence(self, tree: HypothesisTree, named: Hypothesis | None, margin: float) -> float:
        """From the evidence: the validated suspect's supporting lanes and its lead over the rest."""
        if named is None or named.state is not HypothesisState.VALIDATED:
            return 0.0
        lanes = {e.source for e in named.validating_evidence}
        value = BASE_CONFIDENCE + PER_EXTRA_SOURCE * (len(lanes) - 1) + MARGIN_WEIGHT * margin
        return round(min(MAX_CONFIDENCE, max(0.0, value)), 4)


@dataclass(frozen=True)
class Spend:
    """Language-model use: input + output tokens, and US dollars."""

    tokens: int = 0
    cost_usd: float = 0.0
