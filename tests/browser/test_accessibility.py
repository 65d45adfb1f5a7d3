"""Every page a responder reviews, checked by axe-core (axe-playwright-python) in Chromium: no serious
or critical accessibility violation. The same walk writes the full-page screenshots of
docs/screenshots/ when ROOTLINE_SCREENSHOTS names a folder (`python3 dev.py screenshots`, which also
imports the example incidents so the pictures show real investigations)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.contrib.auth.models import User
from django.core.management import call_command

from graphstore.sync import project_investigation
from rca.core.actions import ActionTier
from rca.core.grounding import Grounding
from rca.incidents.investigations import run_investigation
from rca.incidents.models import ActionProposal, Incident, Investigation
from tests.browser.conftest import PASSWORD, Session
from tests.integration.api import factories

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
# axe-core's impact levels that fail the test; "minor" and "moderate" are reported, not failed.
FAILING_IMPACTS = {"serious", "critical"}
# Incidents of these systems get their explorer pictured (the largest example graphs).
EXPLORED_SYSTEMS = ("petshop", "trainticket")


def _examples() -> list[Incident]:
    """The example incidents (`manage.py import_examples`), investigated here, synchronously; a tier
    no example proposes is pictured on the most confident example, proposed at that lower tier."""
    call_command("import_examples", "--data", str(DATA), verbosity=0)
    for investigation in Investigation.objects.filter(status=Investigation.Status.QUEUED):
        run_investigation(investigation.pk)
        # Into the graph too, as the worker's follow-up does: the explorer reads it from there.
        project_investigation(Investigation.objects.get(pk=investigation.pk))
    best = Investigation.objects.filter(exit="confident").order_by("-capped_confidence").first()
    proposed = set(ActionProposal.objects.values_list("tier", flat=True))
    if best is not None:
        for tier in ActionTier:
            if tier.value not in proposed and ActionTier(best.tier).allows(tier):
                factories.proposal(
                    best, tier=tier.value, title=f"{best.root_cause_entity}: {tier.value} only"
                )
    return list(Incident.objects.order_by("pk"))


def _made_up() -> list[Incident]:
    """Stand-ins for the examples, one per tier and one with no confident root cause."""
    made = [
        factories.investigation(grounding=Grounding.GROUNDED, raw_confidence=0.92),
        factories.investigation(grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.8),
        factories.investigation(grounding=Grounding.UNGROUNDED, raw_confidence=0.99),
        factories.investigation(confident=False, raw_confidence=0.3),
    ]
    for investigation in made:
        factories.proposal(investigation)
    return [investigation.incident for investigation in made]


def _pages(incidents: list[Incident]) -> list[tuple[str, str]]:
    """(screenshot name, path) of every page to check."""
    pages = [
        ("incident-list", "/incidents/"),
        ("inbox", "/actions/"),
        ("integrations", "/integrations/"),
        ("status", "/status/"),
    ]
    for incident in incidents:
        latest = incident.investigations.order_by("-created_at", "-pk").first()
        kind = latest.exit if latest is not None and latest.exit else "pending"
        # The system the title opens with ("PetShop (AWS): ..."), as a file-name part.
        system = re.sub(r"[^a-z0-9]+", "-", incident.title.split(":", 1)[0].lower()).strip("-")
        pages.append((f"incident-{incident.pk}-{system}-{kind}", f"/incidents/{incident.pk}/"))
        if any(name in system for name in EXPLORED_SYSTEMS) or not os.environ.get("ROOTLINE_SCREENSHOTS"):
            pages.append((f"explorer-{incident.pk}-{system}", f"/incidents/{incident.pk}/explorer/"))
    seen: set[str] = set()
    for proposal in ActionProposal.objects.order_by("pk"):
        if proposal.tier not in seen:  # the action page in dry run, once per tier
            seen.add(proposal.tier)
            pages.append((f"action-{proposal.tier}-dry-run", f"/actions/{proposal.pk}/"))
    pages.append(("search", "/search/?q=checkout+errors"))
    return pages


def test_no_serious_or_critical_accessibility_violation(
    transactional_db: None,
    graph: object,
    settings: Any,
    sessions: list[Session],
    browser: Any,
    live_server: Any,
    artifacts: Path,
) -> None:
    settings.ROOTLINE_ACTIONS = replace(settings.ROOTLINE_ACTIONS, dry_run=True)
    target = os.environ.get("ROOTLINE_SCREENSHOTS")
    incidents = _examples() if target else _made_up()
    factories.user("approver", name="ada")
    account = User.objects.get(username="ada")
    account.set_password(PASSWORD)
    account.save()
    session = Session(browser, live_server.url, artifacts, "ada")
    sessions.append(session)
    session.login("ada")
    axe = Axe()
    found: dict[str, list[str]] = {}
    tiers_seen = {p.tier for p in ActionProposal.objects.all()}
    assert {ActionTier.NOTIFY.value} <= tiers_seen
    for name, path in _pages(incidents):
        response = session.goto(path)
        assert response is not None
        assert response.status == 200, path
        results = axe.run(session.page)
        bad = [
            f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
            for v in results.response["violations"]
            if v.get("impact") in FAILING_IMPACTS
        ]
        if bad:
            found[path] = bad
        if target:
            Path(target).mkdir(parents=True, exist_ok=True)
            session.page.screenshot(path=str(Path(target) / f"{name}.png"), full_page=True)
    (artifacts / "axe-violations.json").write_text(json.dumps(found, indent=2))
    assert not found, found
