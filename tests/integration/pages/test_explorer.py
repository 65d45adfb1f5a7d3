"""The explorer reads the conclusion from the graph database (Cypher through graphstore), lists the
incidents related through the graph, and falls back to the stored result with a banner when the graph
cannot answer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from django.conf import settings
from django.test import Client
from neo4j import Driver

from frontend.explorer_page import GRAPH_DOWN, GRAPH_PENDING
from graphstore.driver import close_driver, database
from graphstore.sync import project_investigation
from tests.conftest import free_port
from tests.integration.graph.factory import make_incident, make_investigation

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def graph_down() -> Iterator[None]:
    """The app's driver pointed at a port nothing listens on."""
    previous = settings.ROOTLINE_GRAPH
    settings.ROOTLINE_GRAPH = replace(previous, uri=f"bolt://127.0.0.1:{free_port()}")
    close_driver()
    yield
    settings.ROOTLINE_GRAPH = previous
    close_driver()


def test_the_explorer_draws_the_conclusion_read_from_the_graph(viewer: Client, graph: Driver) -> None:
    incident = make_incident()
    project_investigation(make_investigation(incident))  # db -> payment -> checkout
    related = make_incident(symptom="edge")
    project_investigation(make_investigation(related, path=("db", "edge")))
    # Only the graph says so: the page shows what the graph holds, not the relational rows.
    graph.execute_query(
        "MATCH (h:Hypothesis) WHERE h.incident = $key AND h.entity = 'payment' SET h.state = 'refuted'",
        key=f"incident:{incident.pk}",
        database_=database(),
    )

    page = viewer.get(f"/incidents/{incident.pk}/explorer/")
    assert page.status_code == 200
    assert page.context["banner"] == ""
    explained = page.context["explanation"]
    assert explained.source == "graph"
    assert explained.root_cause == "db"
    assert {h.entity: h.state for h in explained.hypotheses}["payment"] == "refuted"
    assert [(h.cause, h.effect) for h in page.context["hops"]] == [("db", "payment"), ("payment", "checkout")]
    assert [r.incident_id for r in page.context["related"]] == [related.pk]
    body = page.content.decode()
    assert 'data-source="graph"' in body
    assert f'href="/incidents/{related.pk}/"' in body
    assert "same root cause db" in body


def test_an_unprojected_investigation_is_drawn_from_its_stored_result(viewer: Client, graph: Driver) -> None:
    incident = make_incident()
    make_investigation(incident)
    page = viewer.get(f"/incidents/{incident.pk}/explorer/")
    assert page.status_code == 200
    assert page.context["banner"] == GRAPH_PENDING
    assert page.context["explanation"].source == "document"
    assert page.context["explanation"].root_cause == "db"


def test_with_the_graph_down_the_page_falls_back_and_says_so(viewer: Client, graph_down: None) -> None:
    incident = make_incident()
    make_investigation(incident)
    page = viewer.get(f"/incidents/{incident.pk}/explorer/")
    assert page.status_code == 200
    assert page.context["banner"] == GRAPH_DOWN
    assert 'id="graph-banner"' in page.content.decode()
    explained = page.context["explanation"]
    assert explained.source == "document"
    assert [h.entity for h in explained.hypotheses] == ["db", "payment", "checkout"]
    assert page.context["related"] == []
    assert "graph database is unavailable" in page.context["related_note"]


@pytest.mark.parametrize("query", ["all=yes", "series=everything"])
def test_unknown_explorer_options_are_a_400(viewer: Client, graph_down: None, query: str) -> None:
    incident = make_incident()
    make_investigation(incident)
    page = viewer.get(f"/incidents/{incident.pk}/explorer/?{query}")
    assert page.status_code == 400
    assert "Unknown explorer option" in page.content.decode()


def test_the_timeline_draws_the_top_series_by_deviation_and_shows_more_on_request() -> None:
    from frontend.explorer_page import explorer_timeline
    from rca.investigation.document import CitationDoc, FactsDoc, ResultDocument, SeriesDoc

    incident = make_incident()
    onset = incident.onset.timestamp()
    series = [
        SeriesDoc(
            entity=f"svc-{i % 3}",
            metric=f"m{i}",
            timestamps=[onset - 60, onset, onset + 60],
            values=[1.0, 1.0 + i, 1.0],
            baseline=1.0,
            spread=1.0,
            z=float(i),
        )
        for i in range(11)
    ]
    deploy = CitationDoc(kind="deploy", ref="v42", entity="svc-1", at=onset - 30, title="pool size")
    document = ResultDocument(symptom="svc-0", facts=FactsDoc(series=series, citations=[deploy]))

    figure, rows, hidden = explorer_timeline(incident, document, False)
    assert figure is not None
    assert hidden == 3
    assert sorted(t["name"] for t in figure["data"]) == sorted(f"m{i}" for i in range(3, 11))
    assert rows[0] == "svc-0"  # the symptom's row first (path order), then the others by name
    hovers = [a.get("hovertext") for a in figure["layout"]["annotations"]]
    assert "deploy v42 on svc-1: pool size" in hovers

    everything, _, none_hidden = explorer_timeline(incident, document, True)
    assert everything is not None
    assert none_hidden == 0
    assert len(everything["data"]) == 11
