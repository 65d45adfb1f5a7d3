"""What an investigation concludes, as plain immutable data that serialises to JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from rca.core.actions import Outcome
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
    validated: bool = False  # the gate found validated evidence (before calibration)
    calibration_scores: Mapping[str, float] = field(default_factory=dict)  # rca.core.calibration.features
    calibrated_probability: float | None = None  # that the named cause is right (None: no map)

    @property
    def confident(self) -> bool:
        """Whether the run names a root cause."""
        return self.exit == "confident"
