"""The explorer's reads: an incident's subgraph and propagation path, a service's neighbourhood and
its past incidents. Everything comes back as plain dicts and lists (no driver objects), so views and
serializers can hand it straight to JSON.

Like the writes, every query is a constant with parameters, in Cypher that runs on Neo4j 5 and
ArcadeDB alike.
"""

from __future__ import annotations

from typing import Any

from neo4j import Driver, ManagedTransaction, Transaction
from neo4j.graph import Node, Relationship

from graphstore import session
from graphstore.document import incident_key

MAX_DEPTH = 3  # neighbourhood radius cap: past three hops a dense topology returns most of itself

# --- an incident -----------------------------------------------------------------------------------

# The incident, what it points at (symptom, root cause, hypotheses, cited change), and one step
# further (hypotheses' evidence and services, the change's service).
_SUBGRAPH = """
MATCH (i:Incident {key: $incident})
OPTIONAL MATCH (i)-[r1]->(a)
OPTIONAL MATCH (a)-[r2:ABOUT|EVIDENCED_BY]->(b)
RETURN i, collect(DISTINCT r1) AS first, collect(DISTINCT a) AS near,
       collect(DISTINCT r2) AS second, collect(DISTINCT b) AS far
"""

# No labels on the ends (PROPAGATED_TO only joins services): with them ArcadeDB 26.10 expands from the
# Service nodes instead of the relationship index, 46 ms instead of 6 ms with 10,000 hops on one edge.
_PATH = """
MATCH (a)-[r:PROPAGATED_TO]->(b)
WHERE r.incident = $incident
RETURN a, r, b
ORDER BY r.seq
"""

# CALLS among a set of services, found from each service's side (an indexed lookup per service).
_CALLS_AMONG = """
UNWIND $services AS s
MATCH (a:Service {namespace: s.namespace, name: s.name})-[r:CALLS]->(b:Service)
RETURN a, r, b
"""


def incident_subgraph(
    incident_id: int, driver: Driver | None = None, database: str | None = None
) -> dict[str, Any] | None:
    """The incident's projection as nodes and relationships, or None when it is not projected.

    Nodes are `{id, label, properties}` and relationships `{id, type, start, end, properties}`; ids
    are the server's element ids (stable within one answer). The services involved come with the
    CALLS edges between them, and the propagation path's PROPAGATED_TO edges are included.
    """
    key = incident_key(incident_id)

    def work(tx: ManagedTransaction) -> dict[str, Any] | None:
        record = tx.run(_SUBGRAPH, incident=key).single()
        if record is None:
            return None
        nodes: dict[str, dict[str, Any]] = {}
        rels: dict[str, dict[str, Any]] = {}
        for node in [record["i"], *record["near"], *record["far"]]:
            nodes[node.element_id] = _node(node)
        for rel in [*record["first"], *record["second"]]:
            rels[rel.element_id] = _relationship(rel)
        for hop in tx.run(_PATH, incident=key):
            for node in (hop["a"], hop["b"]):
                nodes[node.element_id] = _node(node)
            rels[hop["r"].element_id] = _relationship(hop["r"])
        services = [n["properties"] for n in nodes.values() if n["label"] == "Service"]
        among = {(s["namespace"], s["name"]) for s in services}
        params = [{"namespace": ns, "name": name} for ns, name in sorted(among)]
        for call in tx.run(_CALLS_AMONG, services=params):
            if (call["b"]["namespace"], call["b"]["name"]) in among:
                rels[call["r"].element_id] = _relationship(call["r"])
        return {
            "incident": dict(record["i"]),
            "nodes": sorted(nodes.values(), key=lambda n: (n["label"], n["id"])),
            "relationships": sorted(rels.values(), key=lambda r: (r["type"], r["id"])),
        }

    return session.read(work, driver, database)


def propagation_path(
    incident_id: int, driver: Driver | None = None, database: str | None = None
) -> list[dict[str, Any]]:
    """The incident's propagation hops in order, root cause first, each with its evidence summaries and
    its forward verification (`verified`, and the rules it did not pass)."""

    def work(tx: ManagedTransaction) -> list[dict[str, Any]]:
        return _hops(tx, incident_key(incident_id))

    return session.read(work, driver, database)


def _hops(tx: ManagedTransaction | Transaction, key: str) -> list[dict[str, Any]]:
    return [
        {
            "seq": hop["r"]["seq"],
            "cause": hop["a"]["name"],
            "cause_namespace": hop["a"]["namespace"],
            "effect": hop["b"]["name"],
            "effect_namespace": hop["b"]["namespace"],
            "edge": bool(hop["r"].get("edge", False)),
            "evidence": list(hop["r"].get("evidence") or []),
            "verified": hop["r"].get("verified"),
            "failed_rules": list(hop["r"].get("failed_rules") or []),
        }
        for hop in tx.run(_PATH, incident=key)
    ]


# --- the explorer: one incident's explanation and the incidents related to it ------------------------

_INCIDENT_ROOT = """
MATCH (i:Incident {key: $incident})
OPTIONAL MATCH (i)-[r:ROOT_CAUSED_BY]->(s:Service)
RETURN i, r, s
"""
# The hypotheses by their indexed incident key, then their evidence through EVIDENCED_BY.
_HYPOTHESES = """
MATCH (h:Hypothesis) WHERE h.incident = $incident
RETURN h
ORDER BY h.rank, h.hypothesis
"""
_EVIDENCE = """
MATCH (h:Hypothesis)-[r:EVIDENCED_BY]->(e:Evidence) WHERE h.incident = $incident
RETURN h.key AS hypothesis, r, e
ORDER BY e.seq
"""
# Related incidents: each traversal starts from named Service nodes (an indexed lookup) and reads at
# most $limit relationships. ArcadeDB yields a node's most recently linked relationships first, so that
# is each kind's latest, and the latest `limit` of their union are among them. Sorting every match
# instead (10,000 incidents sharing a root cause) took 0.3 s for the root cause and 0.8 s for an edge
# (measured on ArcadeDB 26.10, 2 CPUs).
_ROOT_OF = """
MATCH (:Incident {key: $incident})-[:ROOT_CAUSED_BY]->(s:Service)
RETURN s.namespace AS namespace, s.name AS name
"""
_SAME_ROOT = """
MATCH (s:Service {namespace: $namespace, name: $name})<-[:ROOT_CAUSED_BY]-(o:Incident)
WHERE o.key <> $incident
RETURN o.key AS key
LIMIT $limit
"""
_SAME_EDGE = """
MATCH (a:Service {namespace: $cause_namespace, name: $cause})-[o:PROPAGATED_TO]->
      (b:Service {namespace: $effect_namespace, name: $effect})
WHERE o.incident <> $incident
RETURN o.incident AS key
LIMIT $limit
"""
_INCIDENTS = """
UNWIND $keys AS k
MATCH (i:Incident {key: k})
RETURN i
"""


def explanation(
    incident_id: int, driver: Driver | None = None, database: str | None = None
) -> dict[str, Any] | None:
    """What the explorer draws from the graph: the incident, its hypotheses each with its evidence
    (EVIDENCED_BY, in the sink's order), its root cause (ROOT_CAUSED_BY) and its propagation hops with
    their forward checks. None when the incident is not projected.

    One read transaction without retries: raises `GraphUnavailable` at once when the server is down,
    so a page can fall back to the relational record without waiting.
    """
    key = incident_key(incident_id)

    def work(tx: Transaction) -> dict[str, Any] | None:
        record = tx.run(_INCIDENT_ROOT, incident=key).single()
        if record is None:
            return None
        hypotheses = {
            row["h"]["key"]: {**dict(row["h"]), "evidence": []} for row in tx.run(_HYPOTHESES, incident=key)
        }
        for row in tx.run(_EVIDENCE, incident=key):
            if row["hypothesis"] in hypotheses:
                hypotheses[row["hypothesis"]]["evidence"].append({**dict(row["e"]), **dict(row["r"])})
        root = None
        if record["s"] is not None:
            root = {**_service(record["s"]), **dict(record["r"])}
        return {
            "incident": dict(record["i"]),
            "hypotheses": list(hypotheses.values()),
            "root_cause": root,
            "path": _hops(tx, key),
        }

    return session.read_now(work, driver, database)


def related_incidents(
    incident_id: int, limit: int = 20, driver: Driver | None = None, database: str | None = None
) -> list[dict[str, Any]]:
    """Incidents with the same root cause (ROOT_CAUSED_BY the same service) or the same failing edge
    (a PROPAGATED_TO hop between the same two services), latest first (by incident number), at most
    `limit`.

    Each item is the Incident node's properties plus `reasons`: "same root cause <service>" and
    "same failing edge <cause> → <effect>". Raises `GraphUnavailable` at once when the server is down.
    """
    key = incident_key(incident_id)

    def work(tx: Transaction) -> list[dict[str, Any]]:
        reasons: dict[str, list[str]] = {}
        for root in tx.run(_ROOT_OF, incident=key):
            for row in tx.run(_SAME_ROOT, incident=key, limit=limit, **dict(root)):
                reasons.setdefault(row["key"], []).append(f"same root cause {root['name']}")
        for hop in _hops(tx, key):
            fields = {k: hop[k] for k in ("cause", "cause_namespace", "effect", "effect_namespace")}
            for row in tx.run(_SAME_EDGE, incident=key, limit=limit, **fields):
                reasons.setdefault(row["key"], []).append(
                    f"same failing edge {hop['cause']} → {hop['effect']}"
                )
        latest = sorted(reasons, key=_number, reverse=True)[:limit]
        found = {row["i"]["key"]: dict(row["i"]) for row in tx.run(_INCIDENTS, keys=latest)}
        return [{**found[k], "reasons": reasons[k]} for k in latest if k in found]

    return session.read_now(work, driver, database)


def _number(key: str) -> int:
    """The incident id in an Incident key ("incident:<id>"): ids grow as incidents are opened."""
    return int(key.rpartition(":")[2])


# --- a service -------------------------------------------------------------------------------------

# One constant query per radius: Cypher does not take a parameter as a path length bound.
_NEIGHBOURS = {
    depth: f"""
MATCH (s:Service {{namespace: $namespace, name: $name}})
OPTIONAL MATCH p = (s)-[:CALLS*1..{depth}]-(o:Service)
WHERE o <> s
RETURN s, o, min(length(p)) AS distance
"""
    for depth in range(1, MAX_DEPTH + 1)
}

_PAST = """
MATCH (s:Service {namespace: $namespace, name: $name})<-[r:ROOT_CAUSED_BY|ABOUT]-(i:Incident)
WITH i, collect(type(r)) AS kinds
RETURN i, kinds
ORDER BY i.onset DESC, i.key
LIMIT $limit
"""

_ROLES = {"ROOT_CAUSED_BY": "root_cause", "ABOUT": "symptom"}


def service_neighbourhood(
    name: str,
    namespace: str | None = None,
    depth: int = 1,
    driver: Driver | None = None,
    database: str | None = None,
) -> dict[str, Any] | None:
    """Services within `depth` CALLS hops (either direction) and the CALLS edges among them.

    Returns None when the service is not in the graph. `namespace` None means "" (no namespace),
    as in the node keys.
    """
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be between 1 and {MAX_DEPTH}, not {depth}")

    def work(tx: ManagedTransaction) -> dict[str, Any] | None:
        rows = list(tx.run(_NEIGHBOURS[depth], namespace=namespace or "", name=name))
        if not rows:
            return None
        center = rows[0]["s"]
        services = [{**_service(center), "distance": 0}]
        services += sorted(
            ({**_service(row["o"]), "distance": row["distance"]} for row in rows if row["o"] is not None),
            key=lambda s: (s["distance"], s["namespace"], s["name"]),
        )
        among = {(s["namespace"], s["name"]) for s in services}
        params = [{"namespace": s["namespace"], "name": s["name"]} for s in services]
        calls = [
            {
                "caller": call["a"]["name"],
                "caller_namespace": call["a"]["namespace"],
                "callee": call["b"]["name"],
                "callee_namespace": call["b"]["namespace"],
                "weight": call["r"].get("weight"),
            }
            for call in tx.run(_CALLS_AMONG, services=params)
            if (call["b"]["namespace"], call["b"]["name"]) in among
        ]
        calls.sort(key=lambda c: (c["caller_namespace"], c["caller"], c["callee_namespace"], c["callee"]))
        return {"service": services[0], "services": services, "calls": calls}

    return session.read(work, driver, database)


def past_incidents(
    service: str,
    namespace: str | None = None,
    limit: int = 50,
    driver: Driver | None = None,
    database: str | None = None,
) -> list[dict[str, Any]]:
    """Incidents the service was the root cause or the symptom of, newest onset first.

    Each item is the Incident node's properties plus `roles` ("root_cause", "symptom").
    """

    def work(tx: ManagedTransaction) -> list[dict[str, Any]]:
        rows = tx.run(_PAST, namespace=namespace or "", name=service, limit=limit)
        return [{**dict(row["i"]), "roles": sorted({_ROLES[kind] for kind in row["kinds"]})} for row in rows]

    return session.read(work, driver, database)


def _node(node: Node) -> dict[str, Any]:
    labels = sorted(node.labels)
    return {"id": node.element_id, "label": labels[0] if labels else "", "properties": dict(node)}


def _relationship(rel: Relationship) -> dict[str, Any]:
    start, end = rel.start_node, rel.end_node
    return {
        "id": rel.element_id,
        "type": rel.type,
        "start": start.element_id if start is not None else None,
        "end": end.element_id if end is not None else None,
        "properties": dict(rel),
    }


def _service(node: Node) -> dict[str, Any]:
    return {"name": node["name"], "namespace": node["namespace"], "kind": node.get("kind")}
