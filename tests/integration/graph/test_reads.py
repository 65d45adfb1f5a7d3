"""The explorer's reads: a service's neighbourhood and its past incidents."""

from __future__ import annotations

import pytest
from neo4j import Driver

from graphstore.reads import MAX_DEPTH, past_incidents, service_neighbourhood
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
