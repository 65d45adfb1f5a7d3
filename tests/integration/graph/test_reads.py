"""The explorer's reads: an incident's explanation and related incidents, a service's neighbourhood and
its past incidents."""

from __future__ import annotations

import time

import pytest
from neo4j import Driver

from graphstore.errors import GraphUnavailable
from graphstore.reads import (
    MAX_DEPTH,
    explanation,
    past_incidents,
    related_incidents,
    service_neighbourhood,
)
from graphstore.sync import project_investigation
from tests.integration.graph.factory import make_incident, make_investigation

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_past_incidents_name_the_role_newest_first(graph: Driver) -> None:
    older = make_incident()
    project_investigation(make_investigation(older))  # db -> payment -> checkout
    newer = make_incident()
    project_investigation(make_investigation(newer, path=("checkout",)))  # checkout is its own cause
    unexplained = make_incident(symptom="db")
    project_investigation(make_investigation(unexplained, confident=False, path=("db",)))

    assert [(i["id"], i["roles"]) for i in past_incidents("checkout", "shop")] == [
        (newer.pk, ["root_cause", "symptom"]),
        (older.pk, ["symptom"]),
    ]
    # `db` root-caused the oldest incident and was the symptom of the latest one.
    assert [(i["id"], i["roles"]) for i in past_incidents("db", "shop")] == [
        (unexplained.pk, ["symptom"]),
        (older.pk, ["root_cause"]),
    ]
    assert past_incidents("db", "shop", limit=1)[0]["id"] == unexplained.pk
    assert past_incidents("payment", "shop") == []  # on the path only
    assert past_incidents("nowhere") == []


def test_neighbourhood_grows_with_depth(graph: Driver) -> None:
    project_investigation(
        make_investigation(make_incident("edge"), path=("db", "payment", "checkout", "edge"))
    )
    one = service_neighbourhood("db", "shop")
    assert one is not None
    assert [(s["name"], s["distance"]) for s in one["services"]] == [("db", 0), ("payment", 1)]
    assert [(c["caller"], c["callee"]) for c in one["calls"]] == [("payment", "db")]
    two = service_neighbourhood("db", "shop", depth=2)
    assert two is not None
    assert [(s["name"], s["distance"]) for s in two["services"]] == [
        ("db", 0),
        ("payment", 1),
        ("checkout", 2),
    ]
    assert sorted((c["caller"], c["callee"]) for c in two["calls"]) == [
        ("checkout", "payment"),
        ("payment", "db"),
    ]
    lone = service_neighbourhood("checkout", "shop", depth=MAX_DEPTH)
    assert lone is not None
    assert {s["name"] for s in lone["services"]} == {"checkout", "payment", "db", "edge"}


def test_neighbourhood_of_an_unknown_service_or_bad_depth(graph: Driver) -> None:
    assert service_neighbourhood("nowhere") is None
    for depth in (0, MAX_DEPTH + 1):
        with pytest.raises(ValueError, match="depth must be between 1 and"):
            service_neighbourhood("db", depth=depth)


def test_the_explanation_comes_from_the_graph(graph: Driver) -> None:
    incident = make_incident()
    investigation = make_investigation(incident, evidence=6)
    project_investigation(investigation)

    found = explanation(incident.pk)
    assert found is not None
    assert found["incident"]["investigation"] == investigation.pk
    assert found["root_cause"]["name"] == "db"
    assert found["root_cause"]["fault_kind"] == "latency"
    assert [h["entity"] for h in found["hypotheses"]] == ["db", "payment", "checkout"]
    by_entity = {h["entity"]: h for h in found["hypotheses"]}
    # Evidence through EVIDENCED_BY, in the sink's order: items 0 and 3 went to db, 1 and 4 to payment.
    assert [e["summary"][:6] for e in by_entity["db"]["evidence"]] == ["item 0", "item 3"]
    assert by_entity["db"]["evidence"][0]["verdict"] == "supports"
    assert [e["seq"] for e in by_entity["payment"]["evidence"]] == [0, 1]
    assert [(h["cause"], h["effect"]) for h in found["path"]] == [("db", "payment"), ("payment", "checkout")]
    assert found["path"][0]["evidence"] == ["db p99 up 4x", "payment errors follow db"]
    assert explanation(10**9) is None


def test_related_incidents_share_the_root_cause_or_a_failing_edge(graph: Driver) -> None:
    this = make_incident()
    project_investigation(make_investigation(this))  # db -> payment -> checkout
    same_root = make_incident(symptom="edge")
    project_investigation(make_investigation(same_root, path=("db", "edge")))
    same_edge = make_incident()
    project_investigation(make_investigation(same_edge, path=("cache", "payment", "checkout")))
    unrelated = make_incident(symptom="search")
    project_investigation(make_investigation(unrelated, path=("index", "search")))

    related = related_incidents(this.pk)
    assert [(i["id"], i["reasons"]) for i in related] == [
        (same_edge.pk, ["same failing edge payment → checkout"]),
        (same_root.pk, ["same root cause db"]),
    ]
    assert related_incidents(this.pk, limit=1)[0]["id"] == same_edge.pk  # newest onset first
    assert related_incidents(unrelated.pk) == []


def test_explorer_reads_fail_at_once_when_the_graph_is_down() -> None:
    from dataclasses import replace

    from django.conf import settings as django_settings

    from graphstore.driver import close_driver
    from tests.conftest import free_port

    previous = django_settings.ROOTLINE_GRAPH
    django_settings.ROOTLINE_GRAPH = replace(previous, uri=f"bolt://127.0.0.1:{free_port()}")
    close_driver()
    try:
        started = time.perf_counter()
        with pytest.raises(GraphUnavailable):
            explanation(1)
        with pytest.raises(GraphUnavailable):
            related_incidents(1)
        assert time.perf_counter() - started < 5  # no retry loop (the driver's lasts 10 s)
    finally:
        django_settings.ROOTLINE_GRAPH = previous
        close_driver()
