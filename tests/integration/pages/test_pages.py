"""Every page: 200 for a viewer, a redirect to the login page when anonymous, 404 for unknown ids."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from rca.incidents.models import ActionProposal, Incident, Investigation
from rca.incidents.results import result_document
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def concluded() -> ActionProposal:
    """A confident, grounded investigation with its proposal (as store_result leaves them)."""
    return factories.proposal(factories.investigation())


def _pages(proposal: ActionProposal) -> list[str]:
    incident = proposal.investigation.incident_id
    return [
        "/incidents/",
        f"/incidents/{incident}/",
        f"/incidents/{incident}/progress.json",
        f"/incidents/{incident}/explorer/",
        f"/actions/{proposal.pk}/",
        "/search/",
        "/search/?service=checkout",
    ]


def test_every_page_renders_for_a_viewer(viewer: Client, concluded: ActionProposal) -> None:
    for url in _pages(concluded):
        response = viewer.get(url)
        assert response.status_code == 200, url
        assert "Content-Security-Policy" in response, url


def test_anonymous_users_are_sent_to_the_login_page(client: Client, concluded: ActionProposal) -> None:
    for url in _pages(concluded):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/login/?next="), url


def test_the_root_redirects_to_the_incident_list(viewer: Client) -> None:
    response = viewer.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/incidents/"


@pytest.mark.parametrize(
    "url",
    [
        "/incidents/999999/",
        "/incidents/999999/progress.json",
        "/incidents/999999/explorer/",
        "/actions/999999/",
    ],
)
def test_unknown_ids_are_404(viewer: Client, url: str) -> None:
    assert viewer.get(url).status_code == 404


def test_pages_carry_no_inline_script_or_style(viewer: Client, concluded: ActionProposal) -> None:
    for url in _pages(concluded):
        if url.endswith(".json"):
            continue
        html = viewer.get(url).content.decode()
        assert "<script>" not in html, url
        assert "<style" not in html, url
        assert ' style="' not in html, url
        assert "https://" not in html, url  # nothing is loaded from another host
        assert "cdn." not in html, url


def test_incident_list_filters_searches_and_paginates(viewer: Client) -> None:
    for n in range(30):
        factories.incident(title=f"disk full on db-{n}", severity="warning" if n % 2 else "critical")
    factories.incident(title="checkout latency", symptom_entity="payments", status=Incident.Status.RESOLVED)
    page = viewer.get("/incidents/")
    assert page.context["page"].paginator.count == 31
    assert len(page.context["page"].object_list) == 25
    assert viewer.get("/incidents/?page=2").context["page"].number == 2
    assert viewer.get("/incidents/?q=latency").context["page"].paginator.count == 1
    assert viewer.get("/incidents/?status=resolved").context["page"].paginator.count == 1
    assert viewer.get("/incidents/?service=payments").context["page"].paginator.count == 1
    assert viewer.get("/incidents/?severity=warning").context["page"].paginator.count == 15
    # an unknown status is ignored rather than an error page
    assert viewer.get("/incidents/?status=bogus&page=x").status_code == 200


def test_incident_list_shows_the_latest_tier(viewer: Client) -> None:
    investigation = factories.investigation()
    html = viewer.get("/incidents/").content.decode()
    assert f"tier-{investigation.tier}" in html
    assert investigation.root_cause_entity in html


def test_detail_shows_outcome_gate_tree_chain_and_ladder(viewer: Client, concluded: ActionProposal) -> None:
    investigation = concluded.investigation
    page = viewer.get(f"/incidents/{investigation.incident_id}/")
    html = page.content.decode()
    assert "Confident: payments-db is the root cause (cpu_saturation), grounded" in html
    assert '<dt><abbr class="term" title="Which of the gate&#x27;s four rules' in html
    assert ">Clause</abbr></dt>" in html
    assert "a hypothesis is validated" in html
    roots = page.context["tree"]
    assert [n.hypothesis.key for n in roots] == ["h1"]
    assert [c.hypothesis.key for c in roots[0].children] == ["h2"]  # h2's parent is h1
    assert "payments-db cpu 97% from onset" in html
    assert "commit <code>abc123</code>" in html
    ladder = page.context["ladder"]
    assert [r.tier for r in ladder.rungs if r.current] == [investigation.tier]
    assert f"/actions/{concluded.pk}/" in html


def test_detail_of_a_running_investigation_polls_its_progress(viewer: Client) -> None:
    running = factories.investigation(status=Investigation.Status.RUNNING)
    html = viewer.get(f"/incidents/{running.incident_id}/").content.decode()
    assert 'id="progress"' in html
    assert "frontend/progress.js" in html
    state = viewer.get(f"/incidents/{running.incident_id}/progress.json").json()
    assert state == {
        "investigation": running.pk,
        "status": "running",
        "finished": False,
        "progress": {"turn": 2},
    }


def test_no_confident_root_cause_reads_as_such(viewer: Client) -> None:
    investigation = factories.investigation(confident=False)
    html = viewer.get(f"/incidents/{investigation.incident_id}/").content.decode()
    assert "No confident root cause: budget exhausted" in html
    assert "1 inconclusive" in html


def test_similar_incidents_degrade_to_a_note_without_memory(
    viewer: Client, concluded: ActionProposal, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rca.memory import index

    def unavailable(*args: object, **kwargs: object) -> None:
        raise index.MemoryUnavailable("held by another process")

    monkeypatch.setattr(index, "search", unavailable)
    page = viewer.get(f"/incidents/{concluded.investigation.incident_id}/")
    assert page.status_code == 200
    assert "Incident memory is unavailable" in page.content.decode()


def test_similar_past_incidents_come_from_memory_and_link_to_their_pages(viewer: Client) -> None:
    import uuid

    from rca.memory import index
    from rca.memory.documents import document_for

    tag = uuid.uuid4().hex[:8]  # the session's memory store is shared with other tests
    past = factories.incident(title=f"Checkout errors {tag}", symptom_entity=f"checkout-{tag}")
    past_inv = factories.investigation(past, root=f"payments-db-{tag}", fault_kind="cpu")
    index.upsert(document_for(past, past_inv))
    now = factories.incident(title=f"Checkout errors again {tag}", symptom_entity=f"checkout-{tag}")
    now_inv = factories.investigation(now, root=f"payments-db-{tag}", fault_kind="cpu")
    index.upsert(document_for(now, now_inv))  # itself is in memory too, and must not be listed

    page = viewer.get(f"/incidents/{now.pk}/")
    assert page.status_code == 200
    listed = [p.incident_id for p in page.context["similar"]]
    assert past.pk in listed
    assert now.pk not in listed
    assert f'href="/incidents/{past.pk}/"' in page.content.decode()
    assert f"payments-db-{tag}" in page.content.decode()


def test_explorer_draws_the_path_even_without_topology(viewer: Client, concluded: ActionProposal) -> None:
    page = viewer.get(f"/incidents/{concluded.investigation.incident_id}/explorer/")
    assert page.status_code == 200
    names = [t.get("name") for t in page.context["graph"]["data"]]
    assert "propagation path" in names
    assert 'id="graph-figure"' in page.content.decode()
    assert '<span class="badge ok">verified</span>' in page.content.decode()
    assert "vendor/plotly/plotly.min.js" in page.content.decode()


def test_explorer_without_a_finished_investigation(viewer: Client) -> None:
    incident = factories.incident()
    page = viewer.get(f"/incidents/{incident.pk}/explorer/")
    assert page.status_code == 200
    assert "nothing to explore" in page.content.decode()


def test_plotly_is_served_from_the_wheel(viewer: Client) -> None:
    from django.contrib.staticfiles import finders

    assert finders.find("vendor/plotly/plotly.min.js")
    assert finders.find("frontend/plotly-strict.css")


def test_search_falls_back_to_titles_when_memory_is_unavailable(
    viewer: Client, concluded: ActionProposal, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rca.memory import index

    def unavailable(*args: object, **kwargs: object) -> None:
        raise index.MemoryUnavailable("held by another process")

    monkeypatch.setattr(index, "search", unavailable)
    incident = concluded.investigation.incident
    page = viewer.get("/search/", {"q": "checkout 5xx"})
    assert "Incident memory is unavailable" in page.content.decode()
    assert [r.incident_id for r in page.context["results"]] == [incident.pk]


def test_search_filters_without_text_use_the_rows(viewer: Client, concluded: ActionProposal) -> None:
    factories.investigation(root="inventory", fault_kind="memory_leak")
    by_kind = viewer.get("/search/", {"fault_kind": "memory_leak"}).context["results"]
    assert [r.root_cause for r in by_kind] == ["inventory"]
    by_service = viewer.get("/search/", {"service": "payments-db"}).context["results"]
    assert [r.incident_id for r in by_service] == [concluded.investigation.incident_id]
    by_tier = viewer.get("/search/", {"tier": "pull_request"}).context["results"]
    assert len(by_tier) == 2
    assert viewer.get("/search/", {"since": "2024-05-02"}).context["results"] == []
    assert len(viewer.get("/search/", {"since": "2024-05-01", "until": "2024-05-01"}).context["results"]) == 2
    bad = viewer.get("/search/", {"since": "2024-05-02", "until": "2024-05-01"})
    assert bad.status_code == 200
    assert bad.context["form"].errors


def test_search_by_meaning_through_incident_memory(
    viewer: Client, concluded: ActionProposal, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rca.memory import index
    from rca.memory.documents import document_for

    incident = concluded.investigation.incident
    document = document_for(incident, concluded.investigation)
    seen: list[object] = []

    def search(text: str, filters: index.SearchFilters | None = None, limit: int = 10) -> list[index.Hit]:
        seen.append(filters)
        return [index.Hit(incident_id=incident.pk, score=0.91, document=document)]

    monkeypatch.setattr(index, "search", search)
    page = viewer.get("/search/", {"q": "database cpu", "service": "payments-db", "tier": "pull_request"})
    results = page.context["results"]
    assert [(r.incident_id, r.score) for r in results] == [(incident.pk, 0.91)]
    assert seen == [index.SearchFilters(service="payments-db", tier="pull_request")]


def test_guidance_is_shown_and_a_responder_reruns_applying_it(
    client_as: Callable[[str | None], Client],
) -> None:
    investigation = factories.investigation(confident=False)
    investigation.guidance = {
        "anchor": "conflicting_evidence",
        "detail": "2 deviating entities were examined and none could be told apart",
        "steps": [
            {
                "target": "payment",
                "operation": "examine",
                "verify": "payment's deviation starts before the others'",
                "stop_when": "the evidence still supports more than one",
                "grounds": "payment cpu 4x its baseline",
            }
        ],
        "dropped": [],
    }
    investigation.save()
    page_url = f"/incidents/{investigation.incident_id}/"
    viewer = client_as("viewer")
    page = viewer.get(page_url).content.decode()
    assert "What would help: conflicting evidence" in page
    assert "payment&#x27;s deviation starts before the others&#x27;" in page
    assert "Re-run the investigation" not in page  # a viewer may not
    refused = viewer.post(f"{page_url}rerun/", {"apply_guidance": "1"}, follow=True)
    assert "only a responder" in refused.content.decode()
    assert Investigation.objects.filter(incident_id=investigation.incident_id).count() == 1

    responder = client_as("responder")
    assert "Re-run the investigation" in responder.get(page_url).content.decode()
    done = responder.post(f"{page_url}rerun/", {"apply_guidance": "1"}, follow=True)
    assert "Re-run queued applying its recovery guidance" in done.content.decode()
    new = Investigation.objects.filter(incident_id=investigation.incident_id).order_by("-pk").first()
    assert new is not None
    assert new.applied_guidance["from_investigation"] == investigation.pk
    assert responder.get(f"{page_url}rerun/").status_code == 405


def test_the_incident_page_shows_the_calibrated_probability(
    viewer: Client, concluded: ActionProposal
) -> None:
    investigation = concluded.investigation
    document = result_document(investigation)
    assert document is not None
    outcome = document.outcome.model_copy(update={"calibrated_probability": 0.8312})
    investigation.result_document = document.model_copy(update={"outcome": outcome}).to_json()
    investigation.save(update_fields=["result_document"])
    page = viewer.get(f"/incidents/{investigation.incident_id}/").content.decode()
    assert "calibrated <strong>0.83</strong>" in page
