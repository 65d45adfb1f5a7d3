"""Projection into ArcadeDB over Bolt: contents, idempotency, replacement, bounded round trips,
parameters only, and a down server."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import neo4j
import pytest
from neo4j import Driver, GraphDatabase

from graphstore.document import GraphDocument, RootCause, ServiceRef, document_for
from graphstore.driver import database
from graphstore.errors import GraphUnavailable
from graphstore.projection import STATEMENTS, project
from graphstore.reads import incident_subgraph, propagation_path, service_neighbourhood
from graphstore.schema import ensure_schema
from graphstore.sync import project_investigation
from rca.telemetry.model import DependencyGraph, Edge, Entity
from tests.conftest import free_port
from tests.integration.graph.factory import graph_counts, make_incident, make_investigation

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def root_causes(driver: Driver, incident_id: int) -> list[str]:
    records = driver.execute_query(
        "MATCH (i:Incident {id: $id})-[:ROOT_CAUSED_BY]->(s:Service) RETURN s.name AS name",
        id=incident_id,
        database_=database(),
    ).records
    return [r["name"] for r in records]


def test_projected_incident_reads_back_as_subgraph_and_path(graph: Driver) -> None:
    incident = make_incident()
    investigation = make_investigation(incident, evidence=9)
    report = project_investigation(investigation)
    assert report.statements == len(STATEMENTS)

    sub = incident_subgraph(incident.pk)
    assert sub is not None
    assert sub["incident"]["title"] == "checkout 5xx above 5%"
    assert sub["incident"]["exit"] == "confident"
    assert sub["incident"]["root_cause"] == "db"
    by_label: dict[str, list[dict[str, Any]]] = {}
    for node in sub["nodes"]:
        by_label.setdefault(node["label"], []).append(node["properties"])
    assert sorted((s["namespace"], s["name"]) for s in by_label["Service"]) == [
        ("shop", "checkout"),
        ("shop", "db"),
        ("shop", "payment"),
    ]
    assert sorted(h["hypothesis"] for h in by_label["Hypothesis"]) == ["h-checkout", "h-db", "h-payment"]
    assert len(by_label["Evidence"]) == 9
    assert by_label["Change"] == [
        {
            "entity": "db",
            "ref": "9fceb02",
            "kind": "commit",
            "at": "2024-05-01T09:55:00.000000+00:00",
            "title": "bump connection pool",
            "namespace": "shop",
        }
    ]
    ids = {n["id"]: n for n in sub["nodes"]}
    types = [r["type"] for r in sub["relationships"]]
    assert types.count("ROOT_CAUSED_BY") == 1
    assert types.count("EVIDENCED_BY") == 9
    assert types.count("HAS_HYPOTHESIS") == 3
    assert types.count("PROPAGATED_TO") == 2
    assert types.count("CITES") == 1
    assert types.count("CALLS") == 2  # derived from the path's edges: checkout -> payment -> db
    (rc,) = [r for r in sub["relationships"] if r["type"] == "ROOT_CAUSED_BY"]
    assert ids[rc["end"]]["properties"]["name"] == "db"
    assert rc["properties"]["fault_kind"] == "latency"
    assert rc["properties"]["hypothesis"] == f"{investigation.pk}:h-db"
    evidenced = [r for r in sub["relationships"] if r["type"] == "EVIDENCED_BY"]
    assert set(evidenced[0]["properties"]) == {"tool", "verdict", "source", "summary"}

    hops = propagation_path(incident.pk)
    assert [(h["seq"], h["cause"], h["effect"]) for h in hops] == [
        (0, "db", "payment"),
        (1, "payment", "checkout"),
    ]
    assert hops[0]["evidence"] == ["db p99 up 4x", "payment errors follow db"]
    assert hops[0]["cause_namespace"] == "shop"
    assert hops[0]["edge"] is True


def test_unknown_incident_reads_as_nothing(graph: Driver) -> None:
    assert incident_subgraph(987654) is None
    assert propagation_path(987654) == []


def test_projecting_twice_leaves_the_same_graph(graph: Driver) -> None:
    investigation = make_investigation(make_incident(), evidence=12)
    document = document_for(investigation)
    first = project(document)
    once = graph_counts(graph, database())
    second = project(document)
    assert graph_counts(graph, database()) == once
    assert first.nodes_created > 0
    assert second.nodes_created == 0
    assert second.nodes_deleted == 0
    assert once[0]["Evidence"] == 12
    assert once[1]["ROOT_CAUSED_BY"] == 1


def test_hops_carry_their_forward_verification(graph: Driver) -> None:
    investigation = make_investigation(make_incident())
    checked = {"verified": False, "rules": {"temporal": "fail"}, "failed": ["temporal"]}
    investigation.propagation_path = [
        {**investigation.propagation_path[0], "verification": {**checked, "failed": [], "verified": True}},
        {**investigation.propagation_path[1], "verification": checked},
    ]
    investigation.save()
    project_investigation(investigation)
    hops = propagation_path(investigation.incident_id)
    assert [(h["verified"], h["failed_rules"]) for h in hops] == [(True, []), (False, ["temporal"])]


def test_concurrent_projections_sharing_services_all_land(graph: Driver) -> None:
    """Two workers projecting incidents over the same services at once: MERGE races settle."""
    documents = [document_for(make_investigation(make_incident(), evidence=3)) for _ in range(8)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        reports = list(pool.map(project, documents))
    assert len(reports) == 8
    nodes, rels = graph_counts(graph, database())
    assert nodes["Incident"] == 8
    assert nodes["Service"] == 3  # db, payment, checkout: one node each, however many incidents
    assert rels["ROOT_CAUSED_BY"] == 8


def test_reinvestigation_replaces_the_previous_projection(graph: Driver) -> None:
    incident = make_incident()
    other = make_incident(symptom="cart")
    project_investigation(make_investigation(other, path=("redis", "cart")))
    project_investigation(make_investigation(incident, evidence=6))
    assert root_causes(graph, incident.pk) == ["db"]

    # Re-investigated without a confident root cause: no ROOT_CAUSED_BY, nothing of the first run left.
    second = make_investigation(incident, confident=False, evidence=4)
    project_investigation(second)
    assert root_causes(graph, incident.pk) == []
    sub = incident_subgraph(incident.pk)
    assert sub is not None
    assert sub["incident"]["exit"] == "no_confident_root_cause"
    assert "root_cause" not in sub["incident"]  # the earlier investigation's property is gone too
    hypotheses = [n["properties"] for n in sub["nodes"] if n["label"] == "Hypothesis"]
    assert {h["investigation"] for h in hypotheses} == {second.pk}
    assert sum(n["label"] == "Evidence" for n in sub["nodes"]) == 4
    assert propagation_path(incident.pk) == []

    # A third run names another root cause: exactly one ROOT_CAUSED_BY, to it.
    third = make_investigation(incident, path=("payment", "checkout"), evidence=3)
    project_investigation(third)
    assert root_causes(graph, incident.pk) == ["payment"]
    assert [(h["cause"], h["effect"]) for h in propagation_path(incident.pk)] == [("payment", "checkout")]
    nodes, rels = graph_counts(graph, database())
    assert rels["ROOT_CAUSED_BY"] == 2  # this incident's one, and the other incident's one
    assert nodes["Hypothesis"] == 2 + 2
    # The other incident's projection is untouched.
    assert root_causes(graph, other.pk) == ["redis"]
    assert len(propagation_path(other.pk)) == 1


def test_no_confident_exit_may_not_name_a_root_cause(graph: Driver) -> None:
    document = document_for(make_investigation(make_incident(), confident=False))
    with pytest.raises(ValueError, match="only a confident exit may name a root cause"):
        replace(document, root_cause=RootCause(ServiceRef("db", "shop"), "latency"))


def test_statement_count_does_not_grow_with_evidence(graph: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[str] = []
    original = neo4j.ManagedTransaction.run

    def counting(self: neo4j.ManagedTransaction, query: Any, *args: Any, **kwargs: Any) -> Any:
        runs.append(str(query))
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(neo4j.ManagedTransaction, "run", counting)
    small = document_for(make_investigation(make_incident(), evidence=2))
    large = document_for(make_investigation(make_incident(symptom="cart"), evidence=200))
    assert len(large.evidence) == 200

    project(small)
    small_runs, runs[:] = len(runs), []
    report = project(large)
    assert len(runs) == small_runs == report.statements == len(STATEMENTS)
    assert report.nodes_created >= 200 + 3 + 1  # evidence, hypotheses, incident (+ new services)
    sub = incident_subgraph(large.incident.id)
    assert sub is not None
    assert sum(n["label"] == "Evidence" for n in sub["nodes"]) == 200
    assert sum(r["type"] == "EVIDENCED_BY" for r in sub["relationships"]) == 200


NASTY = [
    "x'}) DETACH DELETE n //",
    'svc"}) MATCH (m) DETACH DELETE m RETURN 1 //',
    "a\\'b`c $incident {key: 1}",
    "名前 ü\n\tnewline",
]


@pytest.mark.parametrize("name", NASTY)
def test_cypher_in_a_service_name_stays_a_literal(graph: Driver, name: str) -> None:
    bystander = make_investigation(make_incident(symptom="cart"), path=("redis", "cart"))
    project_investigation(bystander)
    before = graph_counts(graph, database())

    incident = make_incident(symptom=name, namespace="ns' OR 1=1 //")
    project_investigation(make_investigation(incident, path=(name, "db", name + "-caller"), evidence=3))
    sub = incident_subgraph(incident.pk)
    assert sub is not None
    names = {n["properties"]["name"] for n in sub["nodes"] if n["label"] == "Service"}
    assert names == {name, "db", name + "-caller"}
    assert sub["incident"]["symptom"] == name
    assert sub["incident"]["symptom_namespace"] == "ns' OR 1=1 //"
    after = graph_counts(graph, database())
    # Nothing was deleted: the bystander's nodes are all still there, plus the new incident's.
    for label, count in before[0].items():
        assert after[0][label] >= count
    assert root_causes(graph, bystander.incident.pk) == ["redis"]
    around = service_neighbourhood(name, namespace="ns' OR 1=1 //")
    assert around is not None
    assert around["service"]["name"] == name
    assert [s["name"] for s in around["services"]] == [name, "db"]


def test_topology_gives_weighted_calls_and_kinds(graph: Driver) -> None:
    incident = make_incident()
    topology = DependencyGraph(
        entities=(
            Entity("checkout", "shop"),
            Entity("payment", "shop"),
            Entity("db", "shop", kind="database"),
            Entity("ledger"),  # no namespace in the topology: the incident's namespace applies
        ),
        edges=(
            Edge("checkout", "payment", 120.0),
            Edge("payment", "db", 80.0),
            Edge("payment", "ledger", 5.0),
        ),
    )
    investigation = make_investigation(incident)
    project_investigation(investigation, topology=topology)
    around = service_neighbourhood("payment", "shop", depth=1)
    assert around is not None
    assert [(s["name"], s["distance"]) for s in around["services"]] == [
        ("payment", 0),
        ("checkout", 1),
        ("db", 1),
        ("ledger", 1),
    ]
    weights = {(c["caller"], c["callee"]): c["weight"] for c in around["calls"]}
    assert weights == {("checkout", "payment"): 120.0, ("payment", "db"): 80.0, ("payment", "ledger"): 5.0}
    kinds = {s["name"]: s["kind"] for s in around["services"]}
    assert kinds["db"] == "database"

    # A replay without the topology (sync_graph) keeps the weights it cannot know.
    project_investigation(investigation)
    again = service_neighbourhood("payment", "shop")
    assert again is not None
    assert {(c["caller"], c["callee"]): c["weight"] for c in again["calls"]} == weights


def test_a_down_graph_server_raises_graph_unavailable(graph: Driver) -> None:
    document = document_for(make_investigation(make_incident()))
    with GraphDatabase.driver(
        f"bolt://127.0.0.1:{free_port()}",
        auth=("root", "nobody-listens"),
        connection_timeout=1.0,
        max_transaction_retry_time=0.5,
    ) as down:
        with pytest.raises(GraphUnavailable, match="graph server unavailable"):
            project(document, driver=down)
        with pytest.raises(GraphUnavailable):
            incident_subgraph(document.incident.id, driver=down)


def test_document_is_plain_data(graph: Driver) -> None:
    document = document_for(make_investigation(make_incident(namespace=None), evidence=3))
    assert isinstance(document, GraphDocument)
    assert document.incident.symptom == ServiceRef("checkout", "")
    assert document.root_cause == RootCause(ServiceRef("db", ""), "latency", "h-db", 0.84)
    assert [h.key for h in document.hypotheses] == ["h-db", "h-payment", "h-checkout"]
    assert document.change is not None
    assert document.change.ref == "9fceb02"
    assert document.hypothesis_key("h-db") == f"{document.investigation.id}:h-db"
    assert document.evidence_key(document.evidence[0]).startswith(f"{document.investigation.id}:h-")


def test_schema_is_created_once_and_enforces_keys(graph: Driver) -> None:
    assert ensure_schema(graph, database(), force=True) == 0  # the fixture created it already
    names = {r["name"] for r in graph.execute_query("SHOW CONSTRAINTS", database_=database()).records}
    assert {"service_key", "incident_key", "hypothesis_key", "evidence_key", "change_key"} <= names
    graph.execute_query("CREATE (:Service {namespace: 'shop', name: 'db'})", database_=database())
    with pytest.raises(neo4j.exceptions.ConstraintError):
        graph.execute_query("CREATE (:Service {namespace: 'shop', name: 'db'})", database_=database())
    graph.execute_query("CREATE (:Service {namespace: '', name: 'db'})", database_=database())  # other key


def test_a_late_task_for_an_older_investigation_does_not_undo_a_newer_one(graph: Driver) -> None:
    incident = make_incident()
    older = make_investigation(incident)
    newer = make_investigation(incident, confident=False)
    project_investigation(newer)
    project_investigation(older)  # e.g. a retried task that was queued before the re-investigation
    sub = incident_subgraph(incident.pk)
    assert sub is not None
    assert sub["incident"]["investigation"] == newer.pk
    assert root_causes(graph, incident.pk) == []


def test_an_unfinished_investigation_is_not_projected(graph: Driver) -> None:
    running = make_investigation(make_incident(), status="running")
    with pytest.raises(ValueError, match="has no finished investigation"):
        project_investigation(running)
