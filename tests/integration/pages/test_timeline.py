"""The incident timeline: one chronological list of the alert, the investigation's turns with their
tool calls and verdicts, the gate, the conclusion, the action and its decision and execution, the
comments and the workflow changes; each evidence line once on the page."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.html import escape

from frontend.timeline import ALERTS_SHOWN
from rca.core.actions import ActionTier
from rca.incidents import workflow
from rca.incidents.approvals import approve
from rca.incidents.comments import add_comment
from rca.incidents.models import Alert, Incident
from rca.incidents.results import result_document
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

CASE = ("rcd-sockshop", "rcd/carts-cpu/1")
ENTRY = re.compile(r'<li class="tl tl-(\w+)"[^>]*>\s*<p class="tl-head"><time datetime="([^"]+)"')


@pytest.fixture
def case() -> Incident:
    """A recorded case imported and investigated by the engine, synchronously."""
    return factories.investigated_case(*CASE)


def kinds(html: str) -> list[str]:
    return [kind for kind, _ in ENTRY.findall(html)]


def test_one_chronological_timeline_of_an_investigated_case(
    case: Incident, client_as: Callable[[str | None], Client]
) -> None:
    investigation = case.investigations.get()
    document = result_document(investigation)
    assert document is not None
    assert document.steps
    alan = factories.user("approver", name="alan")
    proposal = investigation.proposals.get()
    # Notify: always buildable (a patch needs a repository and a manifest, which this test has not).
    approve(proposal, alan, "the evidence holds", tier=ActionTier.NOTIFY)
    add_comment(case, alan, "carts scaled up by hand")
    workflow.acknowledge(case, alan)
    workflow.assign(case, alan, "alan")
    workflow.resolve(case, alan, "cpu back to normal")

    html = client_as("viewer").get(f"/incidents/{case.pk}/").content.decode()
    entries = ENTRY.findall(html)
    stamps = [at for _, at in entries]
    assert stamps == sorted(stamps), "the timeline is chronological"
    order = kinds(html)
    assert order[0] == "alert"
    assert order.count("turn") == len(document.steps)
    assert order.index("gate") < order.index("conclusion") < order.index("proposal") < order.index("decision")
    assert order[-4:] == ["comment", "workflow", "workflow", "workflow"]
    assert "Action approved at tier" in html
    assert "the evidence holds" in html
    assert "Execution" in html  # queued or pending: never silently absent
    assert "Assigned to alan" in html
    assert "cpu back to normal" in html
    # Each turn lists every tool call it made, with its verdict.
    turns = re.findall(r'<li class="tl tl-turn".*?(?=<li class="tl |</ol>)', html, re.S)
    assert [block.count("<li") - 1 for block in turns] == [len(step.tools) for step in document.steps]

    # Every evidence line of the run appears exactly once on the page.
    summaries = {e.summary for h in document.hypotheses for e in h.evidence}
    assert summaries
    for summary in summaries:
        assert html.count(escape(summary)) == 1, summary
    # The evidence chain links to its lines instead of repeating them; each link has its target.
    chain_links = re.findall(r'<p class="small chain-lines">(.*?)</p>', html, re.S)
    assert chain_links
    for anchor in re.findall(r'href="#(ev-[\d-]+)"', chain_links[0]):
        assert f'id="{anchor}"' in html


def test_alert_description_runbook_and_source_are_shown_and_only_http_links_are_links(
    client_as: Callable[[str | None], Client],
) -> None:
    incident = factories.incident()
    now = timezone.now()
    for n, (runbook, source) in enumerate(
        (
            ("https://runbooks.example/checkout-5xx", "http://prometheus:9090/graph?g0.expr=up"),
            ("javascript:alert(1)", "data:text/html,<b>x</b>"),
        )
    ):
        Alert.objects.create(
            incident=incident,
            source="alertmanager",
            fingerprint=f"fp{n}",
            labels={"alertname": "HighErrorRate", "service": "checkout"},
            annotations={"description": f"5xx ratio above 5% ({n})", "runbook_url": runbook},
            starts_at=now - timedelta(minutes=5 - n),
            generator_url=source,
            raw={},
        )
    html = client_as("viewer").get(f"/incidents/{incident.pk}/").content.decode()
    assert kinds(html) == ["alert", "alert"]
    assert "5xx ratio above 5% (0)" in html
    assert "5xx ratio above 5% (1)" in html
    assert 'href="https://runbooks.example/checkout-5xx"' in html
    assert 'href="http://prometheus:9090/graph?g0.expr=up"' in html
    timeline = html[html.index('id="timeline"') : html.index('id="comments"')]
    assert timeline.count("<a href=") == 2
    assert "javascript:" not in html
    assert 'href="data:text' not in html


def test_an_alert_storm_shows_the_first_alerts_then_how_many_more(
    client_as: Callable[[str | None], Client],
) -> None:
    incident = factories.incident()
    now = timezone.now()
    Alert.objects.bulk_create(
        Alert(
            incident=incident,
            source="alertmanager",
            fingerprint=f"storm-{n}",
            labels={"alertname": "HighErrorRate"},
            starts_at=now - timedelta(seconds=n),
            raw={},
        )
        for n in range(ALERTS_SHOWN + 3)
    )
    html = client_as("viewer").get(f"/incidents/{incident.pk}/").content.decode()
    assert kinds(html) == ["alert"] * (ALERTS_SHOWN + 1)
    assert "3 more alerts received" in html
    assert f'href="/api/v1/incidents/{incident.pk}/alerts/"' in html
