"""The result document: one typed, versioned record of what an investigation concluded and of the facts
its tools recorded while it ran, stored with the investigation as JSON.

Everything after the run reads this document and nothing else: the narrative (`narrative.py`), the
pages (the incident page, the explorer) and the API never open the telemetry again. The models are
pydantic, so a stored document is validated when it is read; `DOCUMENT_VERSION` counts its shapes.
Version 1 is what was stored before the document existed (the investigation's rows and JSON fields):
`rca.incidents.results` rebuilds a document from those.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from rca.core.evidence import Evidence
from rca.core.grounding import Citation
from rca.core.hypotheses import Hypothesis
from rca.core.path_verification import Observation
from rca.investigation.result import Candidate, Hop, InvestigationResult
from rca.tools.facts import ExaminedSeries, RunFacts

DOCUMENT_VERSION = 2

SignalValue = bool | int | float | str


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class GateDoc(_Model):
    """The verification gate's decision and the mode it ran in."""

    state: str = ""
    exit: str = ""
    clause: int | str | None = None  # the clause number (stored rows may name it)
    reason: str = ""
    validated_count: int = 0
    root_cause: str | None = None
    auto_remediates: bool = False
    mode: str = ""


class EvidenceDoc(_Model):
    """One evidence record."""

    tool: str
    hypothesis: str
    summary: str
    verdict: str
    source: str
    observed_at: float | None = None
    signals: dict[str, SignalValue] = {}

    @property
    def line(self) -> tuple[str, str, str]:
        """What a reader sees of it (source, tool, summary): two records with the same line say the
        same thing, e.g. one check recorded on a service's hypothesis and again on a finer one."""
        return (self.source, self.tool, self.summary)


class HypothesisDoc(_Model):
    """One node of the hypothesis tree with its evidence."""

    id: str
    entity: str
    fault_kind: str = ""
    parent_id: str | None = None
    detail: str = ""
    prior: float = 0.0
    state: str
    evidence: list[EvidenceDoc] = []


class CandidateDoc(_Model):
    """A ranked root-cause candidate."""

    entity: str
    fault_kind: str = ""
    score: float = 0.0
    belief: str = "deferred"
    detail: str = ""


class VerificationDoc(_Model):
    """A hop's forward verification: each rule's result, and the rules that did not pass."""

    verified: bool
    rules: dict[str, str] = {}
    failed: list[str] = []


class HopDoc(_Model):
    """One hop of the propagation path, cause to effect."""

    cause: str
    effect: str
    edge: bool = False
    evidence: list[str] = []
    verification: VerificationDoc | None = None


class CitationDoc(_Model):
    """A change citation."""

    kind: str
    ref: str
    entity: str
    at: float
    title: str = ""


class ChainDoc(_Model):
    """The evidence chain and its grounding."""

    entity: str | None = None
    path: list[str] = []
    evidence: list[EvidenceDoc] = []
    citation: CitationDoc | None = None
    subscores: dict[str, float] = {}
    grounding: str = ""

    def distinct_evidence(self) -> list[EvidenceDoc]:
        """The validating evidence, each line once (the first record of it), in chain order."""
        first: dict[tuple[str, str, str], EvidenceDoc] = {}
        for item in self.evidence:
            first.setdefault(item.line, item)
        return list(first.values())


class OutcomeDoc(_Model):
    """Confidence, grounding and the action tier."""

    kind: str = ""
    tier: str = ""
    raw_confidence: float | None = None
    capped_confidence: float | None = None
    governing_confidence: float | None = None
    grounding: str = ""
    cap_mode: str = ""
    # That the named cause is right, from the calibration the confident exit is judged by (None: none
    # applied, or a document written before it existed).
    calibrated_probability: float | None = None


class StepDoc(_Model):
    """One examination of the loop."""

    turn: int
    hypothesis: str
    entity: str
    tools: list[str] = []
    verdicts: list[str] = []
    belief: str = "deferred"
    rationale: str = ""


class NextStepDoc(_Model):
    """One proposed recovery step."""

    target: str
    operation: str
    verify: str
    stop_when: str
    grounds: str


class GuidanceDoc(_Model):
    """Recovery guidance of a run that could not conclude."""

    anchor: str
    detail: str = ""
    steps: list[NextStepDoc] = []
    dropped: list[str] = []


class SeriesDoc(_Model):
    """A metric series a tool examined (its finite points in the incident window) and its baseline."""

    entity: str
    metric: str
    instance: str | None = None
    unit: str = ""
    family: str = ""
    timestamps: list[float]
    values: list[float]
    baseline: float
    spread: float
    z: float


class ObservationDoc(_Model):
    """What the hop rules observed of an entity: whether it deviated, and from when."""

    deviates: bool | None
    onset: float | None = None
    resolution_s: float = 0.0


class EntityDoc(_Model):
    """A node of the dependency graph."""

    name: str
    namespace: str | None = None
    kind: str = "service"


class EdgeDoc(_Model):
    """caller -> callee."""

    caller: str
    callee: str
    weight: float = 1.0


class TopologyDoc(_Model):
    """The dependency graph the engine saw."""

    entities: list[EntityDoc] = []
    edges: list[EdgeDoc] = []
    origin: str = ""  # where a live source took the edges from ("" for a recorded case's given graph)


class FactsDoc(_Model):
    """What the tools recorded during the run that later readers need: the graph, the examined series
    and hop observations of the entities on the root cause's route to the symptom, and the change
    citations."""

    topology: TopologyDoc = TopologyDoc()
    series: list[SeriesDoc] = []
    observations: dict[str, ObservationDoc] = {}
    citations: list[CitationDoc] = []


class ResultDocument(_Model):
    """Everything an investigation concluded and why, with the facts recorded while it ran."""

    version: int = DOCUMENT_VERSION
    policy: str = ""
    symptom: str = ""
    onset: float | None = None
    gate: GateDoc = GateDoc()
    exit: str = ""  # "confident" or "no_confident_root_cause" ("" while unknown)
    stop_reason: str = ""
    turns: int = 0
    elapsed_s: float = 0.0
    hypotheses: list[HypothesisDoc] = []
    candidates: list[CandidateDoc] = []
    root_cause: CandidateDoc | None = None
    frontier: list[str] = []
    path: list[HopDoc] = []
    chain: ChainDoc = ChainDoc()
    outcome: OutcomeDoc = OutcomeDoc()
    beliefs: dict[str, str] = {}
    steps: list[StepDoc] = []
    subscores: dict[str, dict[str, float]] = {}
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    policy_failure: str | None = None
    policy_notes: list[str] = []
    guidance: GuidanceDoc | None = None
    facts: FactsDoc = FactsDoc()

    @property
    def confident(self) -> bool:
        """Whether the run names a root cause."""
        return self.exit == "confident"

    def route(self) -> list[str]:
        """The entities from the root cause along the propagation path to the symptom (else the root
        cause and the symptom), in order."""
        ordered: list[str] = []
        for hop in self.path:
            ordered += [hop.cause, hop.effect]
        ordered += [self.root_cause.entity if self.root_cause else "", self.symptom]
        return [name for name in dict.fromkeys(ordered) if name]

    def to_json(self) -> dict[str, Any]:
        """The JSON form stored with the investigation."""
        return self.model_dump(mode="json")


def document_of(result: InvestigationResult) -> ResultDocument:
    """The result document of a finished run."""
    doc = ResultDocument(
        policy=result.policy,
        symptom=result.symptom,
        onset=result.onset,
        gate=GateDoc(
            state=result.gate.state.value,
            exit=result.gate.exit.value,
            clause=result.gate.clause,
            reason=result.gate.reason,
            validated_count=result.gate.validated_count,
            root_cause=result.gate.root_cause.id if result.gate.root_cause else None,
            auto_remediates=result.gate.auto_remediates,
            mode=result.gate_mode.value,
        ),
        exit="confident" if result.confident else "no_confident_root_cause",
        stop_reason=result.stop_reason,
        turns=result.turns,
        elapsed_s=round(result.elapsed_s, 4),
        hypotheses=[_hypothesis(h) for h in result.hypotheses],
        candidates=[_candidate(c) for c in result.candidates],
        root_cause=_candidate(result.root_cause) if result.root_cause else None,
        frontier=list(result.frontier),
        path=[_hop(h) for h in result.path],
        chain=ChainDoc(
            entity=result.chain.entity,
            path=list(result.chain.path),
            evidence=[_evidence(e) for e in result.chain.evidence],
            citation=_citation(result.chain.citation) if result.chain.citation else None,
            subscores=dict(result.chain.subscores),
            grounding=result.chain.grounding.value,
        ),
        outcome=OutcomeDoc(
            kind=result.outcome.kind.value,
            tier=result.outcome.tier.value,
            raw_confidence=result.outcome.confidence.raw,
            capped_confidence=result.outcome.confidence.capped,
            governing_confidence=result.outcome.confidence.governing,
            grounding=result.outcome.confidence.grounding.value,
            cap_mode=result.outcome.confidence.mode.value,
            calibrated_probability=(
                round(result.calibrated_probability, 4) if result.calibrated_probability is not None else None
            ),
        ),
        beliefs={k: v.value for k, v in result.beliefs.items()},
        steps=[
            StepDoc(
                turn=s.turn,
                hypothesis=s.hypothesis_id,
                entity=s.entity,
                tools=list(s.tools),
                verdicts=list(s.verdicts),
                belief=s.belief.value,
                rationale=s.rationale,
            )
            for s in result.steps
        ],
        subscores={k: dict(v) for k, v in result.subscores.items()},
        tokens_in=result.tokens_in,
        tokens_out=result.tokens_out,
        cost_usd=result.cost_usd,
        policy_failure=result.policy_failure,
        policy_notes=list(result.policy_notes),
        guidance=GuidanceDoc.model_validate(result.guidance.to_dict()) if result.guidance else None,
    )
    if result.facts is None:
        return doc
    return doc.model_copy(update={"facts": facts_doc(result.facts, doc.route())})


def facts_doc(facts: RunFacts, route: Sequence[str]) -> FactsDoc:
    """The recorded facts later readers need: the graph, and the series and observations of the
    entities on `route`."""
    on_route = set(route)
    return FactsDoc(
        topology=TopologyDoc.model_validate(facts.graph.to_dict()),
        series=[_series(s) for entity in route for s in facts.series.get(entity, ())],
        observations={e: _observation(o) for e, o in facts.observations.items() if e in on_route},
        citations=[_citation(c) for c in facts.citations],
    )


def _evidence(e: Evidence) -> EvidenceDoc:
    return EvidenceDoc(
        tool=e.tool,
        hypothesis=e.hypothesis_id,
        summary=e.summary,
        verdict=e.verdict.value,
        source=e.source.value,
        observed_at=e.observed_at,
        signals=dict(e.signals),
    )


def _hypothesis(h: Hypothesis) -> HypothesisDoc:
    return HypothesisDoc(
        id=h.id,
        entity=h.entity,
        fault_kind=h.fault_kind,
        parent_id=h.parent_id,
        detail=h.detail,
        prior=h.prior,
        state=h.state.value,
        evidence=[_evidence(e) for e in h.evidence],
    )


def _candidate(c: Candidate) -> CandidateDoc:
    return CandidateDoc(
        entity=c.entity, fault_kind=c.fault_kind, score=c.score, belief=c.belief.value, detail=c.detail
    )


def _hop(h: Hop) -> HopDoc:
    verification = h.verification.to_dict() if h.verification else None
    return HopDoc(
        cause=h.cause,
        effect=h.effect,
        edge=h.edge,
        evidence=list(h.evidence),
        verification=VerificationDoc.model_validate(verification) if verification else None,
    )


def _citation(c: Citation) -> CitationDoc:
    return CitationDoc(kind=c.kind, ref=c.ref, entity=c.entity, at=c.at, title=c.title)


def _series(s: ExaminedSeries) -> SeriesDoc:
    return SeriesDoc(
        entity=s.entity,
        metric=s.metric,
        instance=s.instance,
        unit=s.unit,
        family=s.family,
        timestamps=np.asarray(s.timestamps, dtype=np.float64).tolist(),
        values=np.asarray(s.values, dtype=np.float64).tolist(),
        baseline=s.baseline,
        spread=s.spread,
        z=s.z,
    )


def _observation(o: Observation) -> ObservationDoc:
    return ObservationDoc(deviates=o.deviates, onset=o.onset, resolution_s=o.resolution_s)
