"""The timeline and the approval inbox in a real browser, on a recorded case the engine investigated:
the inbox lists the action awaiting a decision and leads to it; the incident page's timeline is in
order, its evidence chain links land on the evidence lines, and acknowledging or assigning from the
page adds to the timeline. Screenshots go to test-artifacts/browser/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from rca.incidents.models import Incident
from tests.browser.conftest import PASSWORD, Session
from tests.integration.api import factories

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

CASE = ("rcd-sockshop", "rcd/carts-cpu/1")


@pytest.fixture
def case(transactional_db: None) -> Incident:
    """A recorded case imported and investigated by the engine, synchronously."""
    return factories.investigated_case(*CASE)


def test_inbox_then_timeline_then_workflow(
    case: Incident, sessions: list[Session], browser: Any, live_server: Any, artifacts: Path
) -> None:
    account = factories.user("approver", name="alice")
    account.set_password(PASSWORD)
    account.save()
    proposal = case.investigations.get().proposals.get()
    alice = Session(browser, live_server.url, artifacts, "alice")
    sessions.append(alice)
    page = alice.page
    alice.login("alice")

    # The inbox: the action awaiting a decision, with its tier and who may decide; it leads to the action.
    page.click("nav.main-nav >> text=Inbox")
    page.wait_for_url(f"{live_server.url}/actions/")
    row = page.locator(f"#inbox-{proposal.pk}")
    assert row.count() == 1
    assert "approve or reject" in row.inner_text()
    assert "alice" in page.locator("#who-decides").inner_text()
    alice.shot("timeline-01-inbox")
    row.locator("text=Decide").click()
    page.wait_for_url(f"{live_server.url}/actions/{proposal.pk}/")

    # The incident page: one timeline in chronological order, from the alert to the proposed action.
    alice.goto(f"/incidents/{case.pk}/")
    kinds = page.locator("ol.timeline > li.tl").evaluate_all("els => els.map(e => e.dataset.kind)")
    stamps = page.locator("ol.timeline > li.tl time").evaluate_all(
        "els => els.map(e => e.getAttribute('datetime'))"
    )
    assert kinds[0] == "alert"
    assert "turn" in kinds
    assert kinds.index("conclusion") < kinds.index("proposal")
    assert stamps == sorted(stamps)
    alice.shot("timeline-02-incident")

    # A link of the evidence chain lands on its line in the timeline, scrolled into view.
    link = page.locator("p.chain-lines a").first
    anchor = (link.get_attribute("href") or "").lstrip("#")
    link.click()
    target = page.locator(f"[id='{anchor}']")
    assert target.count() == 1
    assert target.is_visible()
    assert page.evaluate(f"document.getElementById('{anchor}').getBoundingClientRect().top") < 900

    # Acknowledge and assign from the page: each adds an entry at the end of the timeline.
    page.click("#acknowledge-button")
    page.wait_for_selector("#acknowledged")
    page.select_option("#assignee-select", "alice")
    page.click("#assign-button")
    page.wait_for_selector("#assignee strong")
    last = page.locator("ol.timeline > li.tl").evaluate_all("els => els.slice(-2).map(e => e.innerText)")
    assert "Acknowledged" in last[0]
    assert "Assigned to alice" in last[1]
    alice.shot("timeline-03-after-workflow")
    assert User.objects.get(username="alice").assigned_incidents.get() == case
