"""What an investigation concludes, as plain immutable data that serialises to JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from rca.core.actions import Outcome
from rca.core.evidence import Evidence
from rca.core.gate import GateDecision
from rca.core.grounding import EvidenceChain
from rca.core.guidance import Guidance
from rca.core.hypotheses import Hypothesis
from rca.core.modes import Mode
from rca.core.path_verification import HopVerification
from rca.tools.facts import RunFacts


class Belief(StrEnum):
    """What the controller believes an entity is, after visiting it (EoG's labels)."""

    ORIGIN = "origin"
    SYMPTOM = "symptom"
    HEALTHY = "healthy"
    DEFERRED = "deferred"


@dataclass(frozen=True)
class Candidate:
    """A ranked root-cause candidate."""

    entity: str
    fault_kind: str
    score: float
    belief: Belief
    detail: str = ""  # what the detail level named (`instance:<pod>`, `change:<ref>`), for the root cause


@dataclass(frozen=True)
class Hop:
    """One step of a propagation path, from cause to effect, with what shows it."""

    cause: str
    effect: str
    edge: bool  # the dependency graph has effect -> cause (the effect calls the cause)
    evidence: tuple[str, ...]  # one-line summaries of the evidence about both ends
    verification: HopVerification | None = None  # the forward-verification rules' results

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with `verification` null when the hop was not checked."""
        return {
            "cause": self.cause,
            "effect": self.effect,
            "edge": self.edge,
            "evidence": list(self.evidence),
            "verification": self.verification.to_dict() if self.verification else None,
        }


@dataclass(frozen=True)
class Step:
    """One turn of the loop: what the policy did and what it saw."""

    turn: int
    hypothesis_id: str
    entity: str
    tools: tuple[str, ...]
    verdicts: tuple[str, ...]
    belief: Belief
    rationale: str


@dataclass(frozen=True)
class InvestigationResult:
    """Everything an investigation concluded and why."""

    policy: str
    symptom: str
    onset: float
    gate: GateDecision
    gate_mode: Mode
    exit: str  # "confident" or "no_confident_root_cause": what governs the outcome
    stop_reason: str
    turns: int
    elapsed_s: float
    hypotheses: tuple[Hypothesis, ...]
    candidates: tuple[Candidate, ...]
    root_cause: Candidate | None
    frontier: tuple[str, ...]
    path: tuple[Hop, ...]
    chain: EvidenceChain
    outcome: Outcome
    beliefs: Mapping[str, Belief]
    steps: tuple[Step, ...]
    subscores: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    policy_failure: str | None = None  # why the policy failed closed (then nothing is named)
    policy_notes: tuple[str, ...] = ()  # retries, rejected model calls, a fallback to the offline policy
    guidance: Guidance | None = None  # recovery guidance, when no confident root cause was found
    facts: RunFacts | None = None  # what the tools recorded during the run (the explorer's series, ...)

    @property
    def confident(self) -> bool:
        """Whether the run names a root cause."""
        return self.exit == "confident"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form for storage and the API."""
        return {
            "policy": self.policy,
            "symptom": self.symptom,
            "onset": self.onset,
            "gate": _gate(self.gate, self.gate_mode),
            "exit": self.exit,
            "stop_reason": self.stop_reason,
            "turns": self.turns,
            "elapsed_s": round(self.elapsed_s, 4),
            "hypotheses": [_hypothesis(h) for h in self.hypotheses],
            "candidates": [_candidate(c) for c in self.candidates],
            "root_cause": _candidate(self.root_cause) if self.root_cause else None,
            "frontier": list(self.frontier),
            "path": [h.to_dict() for h in self.path],
            "chain": _chain(self.chain),
            "outcome": {
                "kind": self.outcome.kind.value,
                "tier": self.outcome.tier.value,
                "raw_confidence": self.outcome.confidence.raw,
                "capped_confidence": self.outcome.confidence.capped,
                "governing_confidence": self.outcome.confidence.governing,
                "grounding": self.outcome.confidence.grounding.value,
                "cap_mode": self.outcome.confidence.mode.value,
            },
            "beliefs": {k: v.value for k, v in self.beliefs.items()},
            "steps": [
                {
                    "turn": s.turn,
                    "hypothesis": s.hypothesis_id,
                    "entity": s.entity,
                    "tools": list(s.tools),
                    "verdicts": list(s.verdicts),
                    "belief": s.belief.value,
                    "rationale": s.rationale,
                }
                for s in self.steps
            ],
            "subscores": {k: dict(v) for k, v in self.subscores.items()},
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": self.cost_usd,
            "policy_failure": self.policy_failure,
            "policy_notes": list(self.policy_notes),
            "guidance": self.guidance.to_dict() if self.guidance else None,
        }


def evidence_dict(e: Evidence) -> dict[str, Any]:
    """One evidence record as JSON."""
    return {
        "tool": e.tool,
        "hypothesis": e.hypothesis_id,
        "summary": e.summary,
        "verdict": e.verdict.value,
        "source": e.source.value,
        "observed_at": e.observed_at,
        "signals": dict(e.signals),
    }


def _gate(d: GateDecision, mode: Mode) -> dict[str, Any]:
    return {
        "state": d.state.value,
        "exit": d.exit.value,
        "clause": d.clause,
        "reason": d.reason,
        "validated_count": d.validated_count,
        "root_cause": d.root_cause.id if d.root_cause else None,
        "auto_remediates": d.auto_remediates,
        "mode": mode.value,
    }


def _hypothesis(h: Hypothesis) -> dict[str, Any]:
    return {
        "id": h.id,
        "entity": h.entity,
        "fault_kind": h.fault_kind,
        "parent_id": h.parent_id,
        "detail": h.detail,
        "prior": h.prior,
        "state": h.state.value,
        "evidence": [evidence_dict(e) for e in h.evidence],
    }


def _candidate(c: Candidate) -> dict[str, Any]:
    return {
        "entity": c.entity,
        "fault_kind": c.fault_kind,
        "score": c.score,
        "belief": c.belief.value,
        "detail": c.detail,
    }


def _chain(c: EvidenceChain) -> dict[str, Any]:
    return {
        "entity": c.entity,
        "path": list(c.path),
        "evidence": [evidence_dict(e) for e in c.evidence],
        "citation": (
            {
                "kind": c.citation.kind,
                "ref": c.citation.ref,
                "entity": c.citation.entity,
                "at": c.citation.at,
                "title": c.citation.title,
            }
            if c.citation
            else None
        ),
        "subscores": dict(c.subscores),
        "grounding": c.grounding.value,
    }
