"""What one investigation contributes to the explanatory graph, as plain typed data.

`GraphDocument` is the only input of `graphstore.projection.project`; it knows nothing of Django or
Cypher, so the benchmark and pure tests can build one by hand. `document_for` builds it from the
relational rows, which stay the source of truth: the graph is a projection that can always be
replayed from them.

Keys (what the projection MERGEs on):
  Service     (namespace or "", name)        after OpenTelemetry service.namespace / service.name
  Incident    "incident:<incident pk>"
  Hypothesis  "<investigation pk>:<hypothesis key>"
  Evidence    "<investigation pk>:<hypothesis key>:<seq>"
  Change      (entity, ref)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rca.core.gate import GateExit
from rca.telemetry.model import DependencyGraph

if TYPE_CHECKING:  # Django models only for type checking: building a document by hand needs no Django.
    from rca.incidents.models import Incident, Investigation


def incident_key(incident_id: int) -> str:
    """The Incident node key."""
    return f"incident:{incident_id}"


def hypothesis_key(investigation_id: int, key: str) -> str:
    """The Hypothesis node key: hypothesis ids are only unique within one investigation."""
    return f"{investigation_id}:{key}"


def evidence_key(investigation_id: int, hypothesis: str, seq: int) -> str:
    """The Evidence node key."""
    return f"{hypothesis_key(investigation_id, hypothesis)}:{seq}"


@dataclass(frozen=True, slots=True, order=True)
class ServiceRef:
    """A service's identity: OpenTelemetry service.namespace ("" when unknown) and service.name."""

    name: str
    namespace: str = ""


@dataclass(frozen=True, slots=True)
class ServiceNode:
    """A service and, where the topology says, what kind of thing it is (service, database, queue...)."""

    ref: ServiceRef
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class CallEdge:
    """caller CALLS callee; `weight` None keeps whatever weight the graph already holds."""

    caller: ServiceRef
    callee: ServiceRef
    weight: float | None = None


@dataclass(frozen=True, slots=True)
class IncidentNode:
    """The incident as the relational database holds it."""

    id: int
    title: str
    status: str
    severity: str
    source: str
    onset: datetime | None
    symptom: ServiceRef | None

    @property
    def key(self) -> str:
        """The Incident node key."""
        return incident_key(self.id)


@dataclass(frozen=True, slots=True)
class InvestigationSummary:
    """The investigation whose conclusion the incident's projection shows (kept on the Incident node)."""

    id: int
    policy: str
    exit: str
    stop_reason: str
    tier: str
    grounding: str
    outcome: str
    raw_confidence: float | None
    capped_confidence: float | None
    finished_at: datetime | None
    candidates: tuple[str, ...] = ()  # ranked candidate entities, best first

    @property
    def confident(self) -> bool:
        """Whether the gate let the investigation exit with a root cause."""
        return self.exit == GateExit.CONFIDENT.value


@dataclass(frozen=True, slots=True)
class HypothesisNode:
    """One node of the final hypothesis tree; `key` is the engine's id within the investigation."""

    key: str
    entity: ServiceRef
    fault_kind: str
    state: str
    prior: float = 0.0
    rank: int = 0
    parent: str = ""


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """One evidence item behind hypothesis `hypothesis` (an engine key), in the sink's order `seq`."""

    hypothesis: str
    seq: int
    tool: str
    source: str
    verdict: str
    summary: str
    target: str = ""
    observed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RootCause:
    """The named root cause of a confident exit."""

    service: ServiceRef
    fault_kind: str
    hypothesis: str = ""  # the validated hypothesis the gate named, when known
    confidence: float | None = None


@dataclass(frozen=True, slots=True)
class PropagationHop:
    """One step of the propagation path, cause -> effect, with the evidence summaries that show it."""

    seq: int
    cause: ServiceRef
    effect: ServiceRef
    edge: bool  # the dependency graph has effect -> cause (the effect calls the cause)
    evidence: tuple[str, ...] = ()
    verified: bool | None = None  # forward verification: all rules passed; None when not checked
    failed_rules: tuple[str, ...] = ()  # the rules that did not pass


@dataclass(frozen=True, slots=True)
class ChangeCitation:
    """The change (commit, PR, deploy, config change) the evidence chain cites."""

    kind: str
    ref: str
    entity: ServiceRef
    at: datetime | None = None
    title: str = ""


@dataclass(frozen=True)
class GraphDocument:
    """Everything one investigation of one incident puts in the graph."""

    incident: IncidentNode
    investigation: InvestigationSummary
    services: tuple[ServiceNode, ...] = ()  # the topology's services; referenced ones are added
    calls: tuple[CallEdge, ...] = ()
    hypotheses: tuple[HypothesisNode, ...] = ()
    evidence: tuple[EvidenceItem, ...] = ()
    root_cause: RootCause | None = None
    hops: tuple[PropagationHop, ...] = ()
    change: ChangeCitation | None = None

    def __post_init__(self) -> None:
        # The invariants the graph relies on are checked once, here, not in Cypher.
        if self.root_cause is not None and not self.investigation.confident:
            raise ValueError(
                f"investigation {self.investigation.id} exits {self.investigation.exit!r}: "
                "only a confident exit may name a root cause"
            )
        keys = [h.key for h in self.hypotheses]
        if len(set(keys)) != len(keys):
            raise ValueError(f"investigation {self.investigation.id} repeats a hypothesis key")
        known = set(keys)
        stray = sorted({e.hypothesis for e in self.evidence} - known)
        if stray:
            raise ValueError(f"evidence refers to unknown hypotheses: {', '.join(stray)}")
        items = [(e.hypothesis, e.seq) for e in self.evidence]
        if len(set(items)) != len(items):
            raise ValueError(f"investigation {self.investigation.id} repeats an evidence seq")

    def hypothesis_key(self, key: str) -> str:
        """The node key of this document's hypothesis `key`."""
        return hypothesis_key(self.investigation.id, key)

    def evidence_key(self, item: EvidenceItem) -> str:
        """The node key of one evidence item."""
        return evidence_key(self.investigation.id, item.hypothesis, item.seq)

    def all_services(self) -> tuple[ServiceNode, ...]:
        """The topology's services plus every service a node or relationship refers to, once each."""
        nodes: dict[ServiceRef, ServiceNode] = {}
        for node in self.services:
            nodes.setdefault(node.ref, node)
        for ref in self._referenced():
            nodes.setdefault(ref, ServiceNode(ref))
        return tuple(nodes[ref] for ref in sorted(nodes))

    def _referenced(self) -> Iterable[ServiceRef]:
        if self.incident.symptom is not None:
            yield self.incident.symptom
        for edge in self.calls:
            yield edge.caller
            yield edge.callee
        for h in self.hypotheses:
            yield h.entity
        if self.root_cause is not None:
            yield self.root_cause.service
        for hop in self.hops:
            yield hop.cause
            yield hop.effect
        if self.change is not None:
            yield self.change.entity


# --- from the relational rows ----------------------------------------------------------------------

Resolve = Callable[[str], ServiceRef]


def document_for(investigation: Investigation, topology: DependencyGraph | None = None) -> GraphDocument:
    """The graph document of a finished investigation, from its rows and JSON fields.

    `topology` (the incident's dependency graph) gives the CALLS edges with their weights and the
    services' kinds; by default, the one stored with the investigation. Without either (a row written
    before topologies were stored) the CALLS edges are the ones the propagation path itself walked
    (`edge` true), with no weight, which leaves any weight already in the graph untouched.
    """
    from rca.incidents.models import Evidence  # deferred: see TYPE_CHECKING above

    if topology is None and investigation.topology:
        topology = DependencyGraph.from_dict(investigation.topology)
    incident = investigation.incident
    resolve = _resolver(incident, topology)
    hypotheses = tuple(
        HypothesisNode(
            key=h.key,
            entity=resolve(h.entity),
            fault_kind=h.fault_kind,
            state=h.state,
            prior=h.prior,
            rank=h.rank,
            parent=h.parent_key,
        )
        for h in investigation.hypotheses.all()
    )
    evidence = tuple(
        EvidenceItem(
            hypothesis=e.hypothesis.key,
            seq=e.seq,
            tool=e.tool,
            source=e.source,
            verdict=e.verdict,
            summary=e.summary,
            target=e.target,
            observed_at=e.observed_at,
        )
        for e in Evidence.objects.filter(hypothesis__investigation=investigation)
        .select_related("hypothesis")
        .order_by("hypothesis__key", "seq")
    )
    hops = _hops(investigation.propagation_path, resolve)
    if topology is not None:
        services = tuple(ServiceNode(resolve(e.name), e.kind) for e in topology.entities)
        calls = tuple(CallEdge(resolve(e.caller), resolve(e.callee), e.weight) for e in topology.edges)
    else:
        services = ()
        calls = tuple(CallEdge(hop.effect, hop.cause) for hop in hops if hop.edge)
    candidates = tuple(
        str(c["entity"]) for c in investigation.candidates if isinstance(c, Mapping) and c.get("entity")
    )
    summary = InvestigationSummary(
        id=investigation.pk,
        policy=investigation.policy,
        exit=investigation.exit,
        stop_reason=str(investigation.gate.get("reason", "")),
        tier=investigation.tier,
        grounding=investigation.grounding,
        outcome=investigation.outcome,
        raw_confidence=investigation.raw_confidence,
        capped_confidence=investigation.capped_confidence,
        finished_at=investigation.finished_at,
        candidates=candidates,
    )
    return GraphDocument(
        incident=IncidentNode(
            id=incident.pk,
            title=incident.title,
            status=incident.status,
            severity=incident.severity,
            source=incident.source,
            onset=incident.onset,
            symptom=resolve(incident.symptom_entity) if incident.symptom_entity else None,
        ),
        investigation=summary,
        # Candidates are the incident's suspects: real services even when no topology is at hand.
        services=services + tuple(ServiceNode(resolve(name)) for name in candidates),
        calls=calls,
        hypotheses=hypotheses,
        evidence=evidence,
        root_cause=_root_cause(investigation, summary, hypotheses, resolve),
        hops=hops,
        change=_citation(investigation.evidence_chain, resolve),
    )


def _resolver(incident: Incident, topology: DependencyGraph | None) -> Resolve:
    """service.name -> ServiceRef, with the namespace from the topology, else the alerts, else the
    symptom's namespace (an incident's services share the alerting service's namespace unless told
    otherwise), else ""."""
    known: dict[str, str] = {}
    for entity in incident.alerts.values_list("entity", flat=True):
        if isinstance(entity, Mapping) and entity.get("service.name") and entity.get("service.namespace"):
            known.setdefault(str(entity["service.name"]), str(entity["service.namespace"]))
    if topology is not None:
        known.update({e.name: e.namespace for e in topology.entities if e.namespace})
    default = known.get(incident.symptom_entity, "")
    return lambda name: ServiceRef(name, known.get(name, default))


def _hops(path: Any, resolve: Resolve) -> tuple[PropagationHop, ...]:
    """The stored `path` hops ({cause, effect, edge, evidence[], verification}) in order."""
    if not isinstance(path, list):
        return ()
    return tuple(
        PropagationHop(
            seq=seq,
            cause=resolve(str(hop["cause"])),
            effect=resolve(str(hop["effect"])),
            edge=bool(hop.get("edge", False)),
            evidence=tuple(str(s) for s in hop.get("evidence", ())),
            verified=_verified(hop),
            failed_rules=tuple(str(r) for r in (hop.get("verification") or {}).get("failed", ())),
        )
        for seq, hop in enumerate(path)
    )


def _verified(hop: Mapping[str, Any]) -> bool | None:
    """Whether a stored hop passed forward verification; None for a hop stored before it existed."""
    check = hop.get("verification")
    return bool(check["verified"]) if isinstance(check, dict) else None


def _root_cause(
    investigation: Investigation,
    summary: InvestigationSummary,
    hypotheses: tuple[HypothesisNode, ...],
    resolve: Resolve,
) -> RootCause | None:
    """The root cause of a confident exit (None otherwise): the named entity, else the gate's hypothesis."""
    if not summary.confident:
        return None
    named_key = str(investigation.gate.get("root_cause") or "")
    named = next((h for h in hypotheses if h.key == named_key), None)
    entity = investigation.root_cause_entity or (named.entity.name if named else "")
    if not entity:
        raise ValueError(f"investigation {investigation.pk} exits confident but names no root cause")
    return RootCause(
        service=resolve(entity),
        fault_kind=investigation.root_cause_kind or (named.fault_kind if named else ""),
        hypothesis=named_key,
        confidence=investigation.capped_confidence,
    )


def _citation(chain: Any, resolve: Resolve) -> ChangeCitation | None:
    """The chain's change citation ({kind, ref, entity, at, title}), if the chain has one."""
    cited = chain.get("citation") if isinstance(chain, Mapping) else None
    if not isinstance(cited, Mapping) or not cited.get("ref") or not cited.get("entity"):
        return None
    at = cited.get("at")
    return ChangeCitation(
        kind=str(cited.get("kind", "")),
        ref=str(cited["ref"]),
        entity=resolve(str(cited["entity"])),
        at=datetime.fromtimestamp(float(at), tz=UTC) if at is not None else None,
        title=str(cited.get("title") or ""),
    )
