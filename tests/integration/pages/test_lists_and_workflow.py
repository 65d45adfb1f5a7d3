"""The incident list (status, assignee, confidence and tier; sort by any column, filters, pages), the
workflow forms on the incident page, and the approval inbox at /actions/."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from frontend.views import PAGE_SIZE
from rca.core.grounding import Grounding
from rca.incidents.approvals import reject
from rca.incidents.models import AuditEvent, Incident
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

ROW = re.compile(r'<td class="num">(\d+)</td>')


def listed(client: Client, query: str = "") -> list[int]:
    response = client.get(f"/incidents/?{query}")
    assert response.status_code == 200
    return [int(pk) for pk in ROW.findall(response.content.decode())]


def test_the_list_shows_assignee_confidence_tier_and_sorts_by_any_column(viewer: Client) -> None:
    alan = factories.user("approver", name="alan")
    high = factories.incident(title="b high", assignee=alan, severity="critical")
    factories.investigation(high, grounding=Grounding.GROUNDED, raw_confidence=0.92)
    mid = factories.incident(title="a mid", severity="warning")
    factories.investigation(mid, grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.7)
    none = factories.incident(title="c none", severity="info")

    html = viewer.get("/incidents/").content.decode()
    assert "<td>alan</td>" in html
    assert '<td class="num">0.92</td>' in html
    assert 'aria-sort="descending"' not in html  # the default sort (newest) has no column header
    assert listed(viewer) == [none.pk, mid.pk, high.pk]
    assert listed(viewer, "sort=-confidence") == [high.pk, mid.pk, none.pk]
    assert listed(viewer, "sort=confidence") == [mid.pk, high.pk, none.pk]  # none last both ways
    assert listed(viewer, "sort=title") == [mid.pk, high.pk, none.pk]
    assert listed(viewer, "sort=-severity") == [high.pk, mid.pk, none.pk]
    assert listed(viewer, "sort=tier") == [mid.pk, high.pk, none.pk]
    assert listed(viewer, "sort=assignee")[0] == high.pk
    assert listed(viewer, "sort=no-such-column") == [none.pk, mid.pk, high.pk]  # dropped, not an error
    sorted_page = viewer.get("/incidents/?sort=confidence&tier=patch").content.decode()
    assert 'aria-sort="ascending"' in sorted_page
    assert "sort=-confidence" in sorted_page  # the header now sorts the other way round
    assert "tier=patch" in sorted_page  # and keeps the filters


def test_the_list_filters_by_assignee_and_tier(viewer: Client) -> None:
    alan = factories.user("responder", name="alan")
    mine = factories.incident(assignee=alan)
    factories.investigation(mine, grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.7)
    other = factories.incident()
    assert listed(viewer, "assignee=alan") == [mine.pk]
    assert listed(viewer, "assigned=no") == [other.pk]
    assert listed(viewer, "assigned=yes") == [mine.pk]
    assert listed(viewer, "tier=patch") == [mine.pk]
    assert listed(viewer, "tier=pull_request") == []


def test_the_list_paginates_and_keeps_sort_and_filters(viewer: Client) -> None:
    for _ in range(PAGE_SIZE + 3):
        factories.incident(severity="critical")
    first = listed(viewer, "severity=critical&sort=id")
    assert len(first) == PAGE_SIZE
    assert first == sorted(first)
    html = viewer.get("/incidents/?severity=critical&sort=id").content.decode()
    assert "severity=critical&amp;sort=id&amp;page=2" in html
    second = listed(viewer, "severity=critical&sort=id&page=2")
    assert len(second) == 3
    assert min(second) > max(first)


def test_workflow_forms_post_redirect_and_audit(client_as: Callable[[str | None], Client]) -> None:
    client = client_as("responder")
    factories.user("approver", name="alan")
    incident = factories.incident()
    page = client.get(f"/incidents/{incident.pk}/").content.decode()
    for button in ("acknowledge-button", "assign-button", "resolve-button"):
        assert f'id="{button}"' in page
    assert 'id="reopen-button"' not in page
    base = f"/incidents/{incident.pk}"
    response = client.post(f"{base}/acknowledge/")
    assert response.status_code == 302
    assert response["Location"] == f"{base}/"
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["Acknowledged."]
    client.post(f"{base}/assign/", {"assignee": "alan"})
    client.post(f"{base}/resolve/", {"note": "fixed"})
    incident.refresh_from_db()
    assert incident.status == Incident.Status.RESOLVED
    assert incident.assignee is not None
    page = client.get(f"{base}/").content.decode()
    assert 'id="reopen-button"' in page
    assert 'id="acknowledge-button"' not in page
    assert "Assigned to alan" in page
    assert "fixed" in page
    refused = client.post(f"{base}/resolve/")
    assert refused.status_code == 409
    assert "a resolved incident cannot be resolved" in refused.content.decode()
    bad = client.post(f"{base}/assign/", {"assignee": "nobody-such"})
    assert bad.status_code == 400
    assert client.post(f"{base}/reopen/").status_code == 302
    assert list(
        AuditEvent.objects.filter(target_id=str(incident.pk))
        .order_by("at", "id")
        .values_list("verb", flat=True)
    ) == [
        "incident.acknowledged",
        "incident.assigned",
        "incident.resolved",
        "incident.resolve_refused",
        "incident.assign_refused",
        "incident.reopened",
    ]


def test_a_viewer_sees_no_workflow_forms_and_a_forged_post_is_403(viewer: Client) -> None:
    incident = factories.incident()
    assert 'id="workflow"' not in viewer.get(f"/incidents/{incident.pk}/").content.decode()
    response = viewer.post(f"/incidents/{incident.pk}/acknowledge/")
    assert response.status_code == 403
    assert "only a responder (or higher) may acknowledge an incident" in response.content.decode()
    assert viewer.get(f"/incidents/{incident.pk}/acknowledge/").status_code == 405


def test_the_inbox_lists_undecided_actions_newest_first_with_tier_confidence_and_deciders(
    client_as: Callable[[str | None], Client],
) -> None:
    factories.user("approver", name="alan")
    factories.user("approver", name="ann", is_active=False)
    older = factories.proposal(factories.investigation(grounding=Grounding.GROUNDED, raw_confidence=0.92))
    newer = factories.proposal(
        factories.investigation(grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.7)
    )
    decided = factories.proposal()
    reject(decided, factories.user("responder"), "not now")

    html = client_as("responder").get("/actions/").content.decode()
    rows = re.findall(r'<tr id="inbox-(\d+)">', html)
    assert rows == [str(newer.pk), str(older.pk)]
    assert "2 actions awaiting a decision" in html
    newer_row = html[html.index(f'id="inbox-{newer.pk}"') : html.index(f'id="inbox-{older.pk}"')]
    assert "tier-patch" in newer_row
    assert "0.70" in newer_row
    assert "reject (approval needs an approver)" in newer_row
    assert "alan" in html
    assert "ann" not in html
    assert f'href="/actions/{newer.pk}/"' in html
    approver_view = client_as("approver").get("/actions/").content.decode()
    assert "approve or reject" in approver_view
    assert client_as(None).get("/actions/").status_code == 302  # to the login page


def test_the_inbox_when_nothing_waits(viewer: Client) -> None:
    html = viewer.get("/actions/").content.decode()
    assert "No action is awaiting a decision." in html
    assert "view only" not in html
