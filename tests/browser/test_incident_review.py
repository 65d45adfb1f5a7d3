"""The review flow in a real browser, on a real recorded case investigated by the engine:
log in, open the incident, explore the graph (path highlighted, hop hover shows evidence), approve an
allowed action, fail to approve a disallowed one, search for the incident. Every step saves a
screenshot under test-artifacts/browser/, and no request may leave 127.0.0.1 / localhost."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from rca.core.grounding import Grounding
from rca.incidents.investigations import run_investigation
from rca.incidents.models import ActionProposal, Incident
from tests.browser.conftest import PASSWORD, Session
from tests.integration.api import factories

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
CASE = ("rcd-sockshop", "rcd/carts-cpu/1")


@pytest.fixture
def case(transactional_db: None) -> Incident:
    """The recorded case imported and investigated synchronously (no worker), then put in memory."""
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    call_command("import_case", *CASE, "--data", str(DATA), verbosity=0)
    incident = Incident.objects.get(recorded_case__case_id=CASE[1])
    run_investigation(incident.investigations.get().pk)
    from rca.memory import index

    # Without memory the search page falls back to the incident rows, which the test accepts too.
    with contextlib.suppress(index.MemoryUnavailable):
        index.index_incident(incident.pk)
    return incident


def test_review_an_investigated_case_end_to_end(
    case: Incident, sessions: list[Session], browser: Any, live_server: Any, artifacts: Path
) -> None:
    factories.user("approver", name="alice")
    factories.user("viewer", name="victor")
    for name in ("alice", "victor"):
        account = User.objects.get(username=name)
        account.set_password(PASSWORD)
        account.save()
    investigation = case.investigations.get()
    proposal = investigation.proposals.get()
    assert investigation.exit == "confident"
    assert investigation.propagation_path

    alice = Session(browser, live_server.url, artifacts, "alice")
    sessions.append(alice)
    page = alice.page

    # 1. log in: the incident list shows the case with its tier badge
    alice.login("alice")
    assert page.locator(f"a[href='/incidents/{case.pk}/']").count() == 1
    assert page.locator(f"td .tier-{investigation.tier}").count() == 1
    alice.shot("01-incident-list")

    # 2. the incident: outcome sentence, gate, hypotheses tree, evidence chain and ladder
    alice.goto(f"/incidents/{case.pk}/")
    sentence = page.locator("#outcome-sentence").inner_text()
    assert sentence.startswith(f"Confident: {investigation.root_cause_entity} is the root cause")
    assert page.locator("li.hyp").count() == investigation.hypotheses.count()
    assert page.locator(".ladder rect.rung.current").count() == 1
    alice.shot("02-incident-detail")

    # 3. the explorer renders, with the propagation path highlighted
    alice.goto(f"/incidents/{case.pk}/explorer/")
    page.wait_for_selector("#graph[data-rendered=true] .plotly .main-svg")
    page.wait_for_selector("#timeline[data-rendered=true] .plotly .main-svg")
    legend = page.locator("#graph .legend").text_content() or ""
    assert "propagation path" in legend
    widths = page.eval_on_selector_all(
        "#graph .scatterlayer .trace .js-line",
        "lines => lines.map(l => [l.style.stroke, parseFloat(l.style.strokeWidth)])",
    )
    assert any(width >= 4 for _, width in widths), widths  # the path is drawn thick, the call edges thin
    assert page.locator("#timeline .shapelayer path").count() >= 1  # the onset line
    alice.shot("03-explorer")

    # 4. hover a hop: its evidence shows in the hover label
    _hover_hop(page)
    label = page.locator("#graph .hoverlayer").text_content() or ""
    first_hop = investigation.propagation_path[0]
    assert f"{first_hop['cause']} → {first_hop['effect']}" in label
    assert first_hop["evidence"][0][:30] in label
    alice.shot("04-explorer-hop-hover")

    # 5. approve the allowed action
    alice.goto(f"/actions/{proposal.pk}/")
    assert page.locator("#approve-button").is_enabled()
    page.fill("#approve-reason", "carts CPU saturation is proven by the metrics evidence")
    page.click("#approve-button")
    page.wait_for_selector(".msg-success")
    assert page.locator("#action-status").inner_text() == "approved"
    assert "action.approved" in page.locator("#audit-trail").inner_text()
    alice.shot("05-action-approved")

    # 6a. a disallowed approval: a tier above the evidence's ceiling, forced past the disabled option
    blocked = factories.proposal(factories.investigation(of=case, grounding=Grounding.UNGROUNDED))
    alice.goto(f"/actions/{blocked.pk}/")
    assert page.locator("#approve-tier option[value=pull_request]").is_disabled()
    page.fill("#approve-reason", "trying to open a pull request anyway")
    page.evaluate(
        "() => { const o = document.querySelector('#approve-tier option[value=pull_request]');"
        " o.disabled = false; o.selected = true; }"
    )
    page.click("#approve-button")
    page.wait_for_selector("#decision-error")
    assert "above what the evidence allows" in page.locator("#decision-error").inner_text()
    assert page.locator("#action-status").inner_text() == "proposed"
    alice.shot("06-approval-refused-above-tier")

    # 6b. a viewer: the approve button is disabled, and the server refuses a forced submission
    victor = Session(browser, live_server.url, artifacts, "victor")
    sessions.append(victor)
    victor.login("victor")
    other = factories.proposal(investigation)
    victor.goto(f"/actions/{other.pk}/")
    assert victor.page.locator("#approve-button").is_disabled()
    assert "Only an approver" in victor.page.locator("#approve-block").inner_text()
    victor.page.evaluate(
        "() => { document.querySelectorAll('#approve-form [disabled]').forEach(e => e.disabled = false);"
        " document.querySelector('#approve-reason').value = 'a viewer trying'; }"
    )
    victor.page.click("#approve-button")
    victor.page.wait_for_selector("#decision-error")
    assert "may approve an action" in victor.page.locator("#decision-error").inner_text()
    victor.shot("07-approval-refused-viewer")
    assert ActionProposal.objects.get(pk=other.pk).status == "proposed"

    # 7. search past incidents for it
    alice.goto("/search/")
    page.fill("input[name=q]", "carts cpu saturation")
    page.click(".search-form button[type=submit]")
    page.wait_for_selector("#search-results, .empty, .note")
    results = page.locator("#search-results")
    if results.count() == 0:  # memory unavailable and no title match: search by service instead
        alice.goto(f"/search/?service={investigation.root_cause_entity}")
    assert page.locator(f"#search-results a[href='/incidents/{case.pk}/']").count() == 1
    alice.shot("08-search")


def _hover_hop(page: Any) -> None:
    """Move the mouse onto the first hop's midpoint marker (the ◆ trace) until its label shows."""
    box = page.evaluate(
        """() => {
          const gd = document.getElementById('graph');
          const i = gd.data.findIndex(t => t.name === 'hop evidence (hover)');
          const point = gd.querySelectorAll('.scatterlayer .trace')[i].querySelector('path.point');
          const r = point.getBoundingClientRect();
          return {x: r.x + r.width / 2, y: r.y + r.height / 2};
        }"""
    )
    page.mouse.move(box["x"] - 30, box["y"] - 30)
    page.mouse.move(box["x"], box["y"], steps=5)
    page.wait_for_function("() => document.querySelector('#graph .hoverlayer .hovertext') !== null")
