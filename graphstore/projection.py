"""Write a `GraphDocument` to the graph: one transaction, a fixed list of UNWIND statements.

Round trips do not grow with the investigation: each kind of node and relationship is written by
one statement over a list parameter (`UNWIND $rows AS row MERGE ...`), so 2 or 2,000 evidence items
cost the same `len(STATEMENTS)` round trips, plus BEGIN and COMMIT. Values only ever travel as
parameters; the query texts below are constants.

Re-projection is idempotent and replaces: the statements first remove what belonged to the incident's
previous projection and is not in this document (stale hypotheses and evidence of an earlier
investigation, and the incident's ABOUT / ROOT_CAUSED_BY / CITES / PROPAGATED_TO relationships), then
MERGE the document on its keys. So projecting the same document twice leaves the same counts, and an
incident never has more than one ROOT_CAUSED_BY. Services, CALLS and Change nodes are shared between
incidents and are only ever merged, never removed here.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from neo4j import Driver, ManagedTransaction, SummaryCounters

from graphstore import session
from graphstore.document import EvidenceItem, GraphDocument, ServiceRef, incident_key


@dataclass(frozen=True, slots=True)
class Statement:
    """One constant Cypher statement (one round trip) and the parameters it uses."""

    name: str
    cypher: str
    params: tuple[str, ...]


# Every statement is one constant text. Those that write lists start with `UNWIND $rows AS row` and
# look nodes up by key from the row: the plain shape that ArcadeDB plans with its indexes. Shapes
# avoided on purpose (all seen on ArcadeDB 26.10): packing several parts into one statement, with
# `WITH count(*)` between them or as `CALL { ... }` subqueries, which made the parts scan instead of
# using the indexes (the four purges took ~50 ms that way, ~3 ms as separate statements); and
# `MATCH (i ...) UNWIND $rows AS r MATCH (n {key: r})`, which matched nothing without a `WITH i`.

# --- replace: what the incident's previous projection has and this document does not --------------
_PURGE_LINKS = Statement(
    "purge_links",
    """
    MATCH (:Incident {key: $incident})-[r:ABOUT|ROOT_CAUSED_BY|CITES]->()
    DELETE r
    """,
    ("incident",),
)
# WHERE, not a {incident: ...} pattern property: ArcadeDB only uses the relationship index for WHERE.
_PURGE_HOPS = Statement(
    "purge_hops",
    "MATCH ()-[r:PROPAGATED_TO]->() WHERE r.incident = $incident DELETE r",
    ("incident",),
)
# Evidence is stale exactly when its hypothesis is: a finished investigation's evidence rows are the
# sink's immutable record, and hypothesis keys carry the investigation. Testing the handful of
# hypothesis keys rather than every evidence key keeps this cheap (ArcadeDB scans an IN list per row).
_PURGE_EVIDENCE = Statement(
    "purge_evidence",
    """
    MATCH (e:Evidence) WHERE e.incident = $incident AND NOT e.hypothesis IN $hypothesis_keys
    DETACH DELETE e
    """,
    ("incident", "hypothesis_keys"),
)
_PURGE_HYPOTHESES = Statement(
    "purge_hypotheses",
    """
    MATCH (h:Hypothesis) WHERE h.incident = $incident AND NOT h.key IN $hypothesis_keys
    DETACH DELETE h
    """,
    ("incident", "hypothesis_keys"),
)

# --- shared topology: merged, never removed (other incidents' projections use the same services) ---
_SERVICES = Statement(
    "services",
    """
    UNWIND $services AS s
    MERGE (n:Service {namespace: s.namespace, name: s.name})
    SET n.kind = coalesce(s.kind, n.kind)
    """,
    ("services",),
)
_CALLS = Statement(
    "calls",
    """
    UNWIND $calls AS c
    MATCH (a:Service {namespace: c.caller.namespace, name: c.caller.name})
    MATCH (b:Service {namespace: c.callee.namespace, name: c.callee.name})
    MERGE (a)-[r:CALLS]->(b)
    SET r.weight = coalesce(c.weight, r.weight)
    """,
    ("calls",),
)

# --- the incident and its conclusion ---------------------------------------------------------------
# `SET i = map` replaces every property, so nothing of an earlier investigation (its root cause, its
# tier) survives on the node.
_INCIDENT = Statement(
    "incident",
    "MERGE (i:Incident {key: $incident}) SET i = $incident_props",
    ("incident", "incident_props"),
)
# Lists of 0 or 1 rows stand in for conditionals: no symptom, root cause or citation -> no rows.
_SYMPTOM = Statement(
    "symptom",
    """
    UNWIND $symptom AS s
    MATCH (i:Incident {key: $incident})
    MATCH (svc:Service {namespace: s.namespace, name: s.name})
    MERGE (i)-[:ABOUT]->(svc)
    """,
    ("incident", "symptom"),
)
_ROOT_CAUSE = Statement(
    "root_cause",
    """
    UNWIND $root_cause AS rc
    MATCH (i:Incident {key: $incident})
    MATCH (s:Service {namespace: rc.service.namespace, name: rc.service.name})
    MERGE (i)-[r:ROOT_CAUSED_BY]->(s)
    SET r = rc.props
    """,
    ("incident", "root_cause"),
)
_HOPS = Statement(
    "hops",
    """
    UNWIND $hops AS h
    MATCH (a:Service {namespace: h.cause.namespace, name: h.cause.name})
    MATCH (b:Service {namespace: h.effect.namespace, name: h.effect.name})
    MERGE (a)-[r:PROPAGATED_TO {incident: $incident, seq: h.seq}]->(b)
    SET r.edge = h.edge, r.evidence = h.evidence, r.verified = h.verified, r.failed_rules = h.failed_rules
    """,
    ("incident", "hops"),
)
_CHANGE = Statement(
    "change",
    """
    UNWIND $change AS c
    MATCH (i:Incident {key: $incident})
    MATCH (s:Service {namespace: c.service.namespace, name: c.service.name})
    MERGE (ch:Change {entity: c.props.entity, ref: c.props.ref})
    SET ch += c.props
    MERGE (i)-[:CITES]->(ch)
    MERGE (ch)-[:ABOUT]->(s)
    """,
    ("incident", "change"),
)
_HYPOTHESES = Statement(
    "hypotheses",
    """
    UNWIND $hypotheses AS h
    MATCH (i:Incident {key: $incident})
    MATCH (s:Service {namespace: h.service.namespace, name: h.service.name})
    MERGE (n:Hypothesis {key: h.props.key})
    SET n = h.props
    MERGE (i)-[:HAS_HYPOTHESIS]->(n)
    MERGE (n)-[:ABOUT]->(s)
    """,
    ("incident", "hypotheses"),
)
# Evidence nested under its hypothesis: one hypothesis lookup per hypothesis, not per item. The
# relationship is merged from the evidence side, which has at most one, so the check stays O(1).
_EVIDENCE = Statement(
    "evidence",
    """
    UNWIND $evidence AS h
    MATCH (n:Hypothesis {key: h.hypothesis})
    WITH n, h
    UNWIND h.items AS e
    MERGE (ev:Evidence {key: e.props.key})
    SET ev = e.props
    MERGE (ev)<-[r:EVIDENCED_BY]-(n)
    SET r = e.link
    """,
    ("evidence",),
)

# The projection, in order: a fixed list, whatever the size of the investigation.
STATEMENTS: tuple[Statement, ...] = (
    _PURGE_LINKS,
    _PURGE_HOPS,
    _PURGE_EVIDENCE,
    _PURGE_HYPOTHESES,
    _SERVICES,
    _CALLS,
    _INCIDENT,
    _SYMPTOM,
    _ROOT_CAUSE,
    _HOPS,
    _CHANGE,
    _HYPOTHESES,
    _EVIDENCE,
)

# Forgetting incidents that are no longer in the relational database (a full `sync_graph`).
PRUNE: tuple[str, ...] = (
    "MATCH (h:Hypothesis) WHERE NOT h.incident IN $keep DETACH DELETE h",
    "MATCH (e:Evidence) WHERE NOT e.incident IN $keep DETACH DELETE e",
    "MATCH ()-[r:PROPAGATED_TO]->() WHERE NOT r.incident IN $keep DELETE r",
    "MATCH (i:Incident) WHERE NOT i.key IN $keep DETACH DELETE i",
)


@dataclass
class ProjectionReport:
    """What one projection did: statements sent (= round trips inside the transaction) and counters."""

    incident: str
    statements: int = 0
    nodes_created: int = 0
    nodes_deleted: int = 0
    relationships_created: int = 0
    relationships_deleted: int = 0
    properties_set: int = 0
    elapsed_s: float = 0.0
    per_statement: dict[str, int] = field(default_factory=dict)  # name -> nodes/relationships changed

    def add(self, name: str, counters: SummaryCounters) -> None:
        """Count one statement and what the server says it changed."""
        self.statements += 1
        self.nodes_created += counters.nodes_created
        self.nodes_deleted += counters.nodes_deleted
        self.relationships_created += counters.relationships_created
        self.relationships_deleted += counters.relationships_deleted
        self.properties_set += counters.properties_set
        self.per_statement[name] = (
            counters.nodes_created
            + counters.nodes_deleted
            + counters.relationships_created
            + counters.relationships_deleted
        )


def project(
    document: GraphDocument, driver: Driver | None = None, database: str | None = None
) -> ProjectionReport:
    """Write `document` in one transaction; raises `GraphUnavailable` when the server is down."""
    params = parameters(document)
    started = time.perf_counter()

    def work(tx: ManagedTransaction) -> ProjectionReport:
        # A fresh report per attempt: the driver re-runs `work` when it retries a transient failure.
        report = ProjectionReport(document.incident.key)
        for statement in STATEMENTS:
            summary = tx.run(statement.cypher, {name: params[name] for name in statement.params}).consume()
            report.add(statement.name, summary.counters)
        return report

    report = session.write(work, driver, database)
    report.elapsed_s = time.perf_counter() - started
    return report


def prune(keep: Collection[int], driver: Driver | None = None, database: str | None = None) -> int:
    """Remove every incident's projection except those of the incident ids in `keep`; returns how
    many incidents were removed."""
    keys = [incident_key(i) for i in keep]

    def work(tx: ManagedTransaction) -> int:
        removed = 0
        for statement in PRUNE:
            removed = tx.run(statement, keep=keys).consume().counters.nodes_deleted
        return removed  # the last statement deletes the Incident nodes

    return session.write(work, driver, database)


# --- the document as statement parameters ----------------------------------------------------------


def parameters(document: GraphDocument) -> dict[str, Any]:
    """Every parameter the statements use, as plain JSON-like values (times as UTC ISO-8601 text).

    Properties that are None are left out of the maps, so `SET n = map` removes them.
    """
    incident, inv = document.incident, document.investigation
    root = document.root_cause
    evidence: dict[str, list[EvidenceItem]] = {}
    for item in document.evidence:
        evidence.setdefault(item.hypothesis, []).append(item)
    return {
        "incident": incident.key,
        "incident_props": _props(
            key=incident.key,
            id=incident.id,
            title=incident.title,
            status=incident.status,
            severity=incident.severity,
            source=incident.source,
            onset=_iso(incident.onset),
            symptom=incident.symptom.name if incident.symptom else None,
            symptom_namespace=incident.symptom.namespace if incident.symptom else None,
            investigation=inv.id,
            policy=inv.policy,
            exit=inv.exit,
            stop_reason=inv.stop_reason,
            tier=inv.tier,
            grounding=inv.grounding,
            outcome=inv.outcome,
            raw_confidence=inv.raw_confidence,
            capped_confidence=inv.capped_confidence,
            finished_at=_iso(inv.finished_at),
            candidates=list(inv.candidates),
            root_cause=root.service.name if root else None,
            root_cause_namespace=root.service.namespace if root else None,
            fault_kind=root.fault_kind if root else None,
        ),
        "symptom": [_service(incident.symptom)] if incident.symptom else [],
        "services": [
            {"namespace": s.ref.namespace, "name": s.ref.name, "kind": s.kind}
            for s in document.all_services()
        ],
        "calls": [
            {"caller": _service(c.caller), "callee": _service(c.callee), "weight": c.weight}
            for c in document.calls
        ],
        "hypothesis_keys": [document.hypothesis_key(h.key) for h in document.hypotheses],
        "hypotheses": [
            {
                "service": _service(h.entity),
                "props": _props(
                    key=document.hypothesis_key(h.key),
                    incident=incident.key,
                    investigation=inv.id,
                    hypothesis=h.key,
                    entity=h.entity.name,
                    namespace=h.entity.namespace,
                    fault_kind=h.fault_kind,
                    state=h.state,
                    prior=h.prior,
                    rank=h.rank,
                    parent=h.parent,
                ),
            }
            for h in document.hypotheses
        ],
        "evidence": [
            {
                "hypothesis": document.hypothesis_key(key),
                "items": [_evidence(document, e) for e in items],
            }
            for key, items in evidence.items()
        ],
        "root_cause": (
            [
                {
                    "service": _service(root.service),
                    "props": _props(
                        investigation=inv.id,
                        fault_kind=root.fault_kind,
                        hypothesis=document.hypothesis_key(root.hypothesis) if root.hypothesis else None,
                        confidence=root.confidence,
                        grounding=inv.grounding,
                        tier=inv.tier,
                    ),
                }
            ]
            if root
            else []
        ),
        "hops": [
            {
                "seq": hop.seq,
                "cause": _service(hop.cause),
                "effect": _service(hop.effect),
                "edge": hop.edge,
                "evidence": list(hop.evidence),
                "verified": hop.verified,
                "failed_rules": list(hop.failed_rules),
            }
            for hop in document.hops
        ],
        "change": (
            [
                {
                    "service": _service(document.change.entity),
                    "props": _props(
                        entity=document.change.entity.name,
                        ref=document.change.ref,
                        kind=document.change.kind,
                        at=_iso(document.change.at),
                        title=document.change.title,
                        namespace=document.change.entity.namespace,
                    ),
                }
            ]
            if document.change
            else []
        ),
    }


def _evidence(document: GraphDocument, e: EvidenceItem) -> dict[str, Any]:
    return {
        "props": _props(
            key=document.evidence_key(e),
            incident=document.incident.key,
            hypothesis=document.hypothesis_key(e.hypothesis),
            seq=e.seq,
            tool=e.tool,
            target=e.target,
            source=e.source,
            verdict=e.verdict,
            summary=e.summary,
            observed_at=_iso(e.observed_at),
        ),
        # The design puts the verdict's facts on the relationship too, for path queries.
        "link": {"tool": e.tool, "verdict": e.verdict, "source": e.source, "summary": e.summary},
    }


def _service(ref: ServiceRef) -> dict[str, str]:
    return {"namespace": ref.namespace, "name": ref.name}


def _props(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _iso(t: datetime | None) -> str | None:
    """UTC ISO-8601 text: portable across servers, plain in reads, and sorts as time does."""
    if t is None:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.astimezone(UTC).isoformat(timespec="microseconds")
