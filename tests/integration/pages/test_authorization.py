"""The pages' authorization matrix: every page route x every kind of signed-in (or not) user.

The API's matrix is `tests/integration/api/test_authorization.py`. Here a refusal of an anonymous
caller is a redirect to the login page (an intake token, which the pages do not accept, is just as
anonymous), a signed-in user without a role gets 403, and a form POST that the role does not allow
changes nothing (its status is checked, and so is its effect).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from rca.incidents.models import ActionProposal, AuditEvent, Comment, Incident, Investigation
from rca.incidents.tokens import issue_token
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _repository(settings: Any) -> None:
    factories.configure_repository(settings)


CALLERS = ("anonymous", "norole", "viewer", "responder", "approver", "intake")
LOGIN = "login"  # a 302 to /login/?next=...
READ = {
    "anonymous": LOGIN,
    "norole": 403,
    "viewer": 200,
    "responder": 200,
    "approver": 200,
    "intake": LOGIN,
}

GETS: list[tuple[str, str, dict[str, int | str]]] = [
    ("home", "/", {**READ, "viewer": 302, "responder": 302, "approver": 302}),
    ("status", "/status/", READ),
    ("integrations", "/integrations/", READ),
    ("incident list", "/incidents/", READ),
    ("incident detail", "/incidents/{incident}/", READ),
    ("progress", "/incidents/{incident}/progress.json", READ),
    ("explorer", "/incidents/{incident}/explorer/", READ),
    ("action review", "/actions/{action}/", READ),
    ("approval inbox", "/actions/", READ),
    ("search", "/search/?q=checkout", READ),
]


def _client(caller: str) -> Client:
    if caller == "intake":
        # A valid intake token on every request: it opens the webhooks, and nothing else.
        return Client(HTTP_AUTHORIZATION=f"Bearer {issue_token('pages-matrix', 'alertmanager').token}")
    client = Client()
    if caller != "anonymous":
        client.force_login(factories.user(None if caller == "norole" else caller))
    return client


def _check(status: int, location: str, expected: int | str) -> None:
    if expected == LOGIN:
        assert status == 302, status
        assert location.startswith("/login/?next="), location
    else:
        assert status == expected, status


@pytest.fixture
def proposal() -> ActionProposal:
    return factories.proposal()


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize(("name", "template", "expected"), GETS, ids=[g[0] for g in GETS])
def test_pages(
    proposal: ActionProposal, caller: str, name: str, template: str, expected: dict[str, int | str]
) -> None:
    url = template.format(incident=proposal.investigation.incident_id, action=proposal.pk)
    response = _client(caller).get(url)
    _check(response.status_code, response.get("Location", ""), expected[caller])
    if response.status_code == 403:
        assert b"holds no Rootline role" in response.content
        assert b"payments-db" not in response.content  # nothing of the incident leaks


# caller -> (status, whether a new investigation is queued)
RERUN: dict[str, tuple[int | str, bool]] = {
    "anonymous": (LOGIN, False),
    "intake": (LOGIN, False),
    "norole": (403, False),
    "viewer": (302, False),  # back to the incident page, with the refusal as a message
    "responder": (302, True),
    "approver": (302, True),
}


@pytest.mark.parametrize("caller", CALLERS)
def test_rerun_form(proposal: ActionProposal, caller: str) -> None:
    incident = proposal.investigation.incident
    before = Investigation.objects.filter(incident=incident).count()
    response = _client(caller).post(f"/incidents/{incident.pk}/rerun/")
    status, queued = RERUN[caller]
    _check(response.status_code, response.get("Location", ""), status)
    assert Investigation.objects.filter(incident=incident).count() == before + int(queued)


# caller -> decision -> (status, whether the proposal is decided afterwards)
DECIDE: dict[str, dict[str, tuple[int | str, bool]]] = {
    "anonymous": {"approve": (LOGIN, False), "reject": (LOGIN, False)},
    "intake": {"approve": (LOGIN, False), "reject": (LOGIN, False)},
    "norole": {"approve": (403, False), "reject": (403, False)},
    "viewer": {"approve": (403, False), "reject": (403, False)},
    "responder": {"approve": (403, False), "reject": (302, True)},
    "approver": {"approve": (302, True), "reject": (302, True)},
}


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_decision_form(proposal: ActionProposal, caller: str, decision: str) -> None:
    response = _client(caller).post(
        f"/actions/{proposal.pk}/", {"decision": decision, "reason": "matrix", "tier": ""}
    )
    status, decided = DECIDE[caller][decision]
    _check(response.status_code, response.get("Location", ""), status)
    proposal.refresh_from_db()
    assert (proposal.status != ActionProposal.Status.PROPOSED) is decided, proposal.status


# caller -> (status, whether the comment is stored)
COMMENT: dict[str, tuple[int | str, bool]] = {
    "anonymous": (LOGIN, False),
    "intake": (LOGIN, False),
    "norole": (403, False),
    "viewer": (403, False),  # the incident page again, with the refusal (audited)
    "responder": (302, True),  # back to the incident page, with "Comment added."
    "approver": (302, True),
}


@pytest.mark.parametrize("caller", CALLERS)
def test_comment_form(proposal: ActionProposal, caller: str) -> None:
    incident = proposal.investigation.incident
    response = _client(caller).post(f"/incidents/{incident.pk}/comments/", {"body": "matrix"})
    status, stored = COMMENT[caller]
    _check(response.status_code, response.get("Location", ""), status)
    if response.status_code == 302 and stored:
        assert response["Location"] == f"/incidents/{incident.pk}/"
    if caller == "norole":
        assert b"holds no Rootline role" in response.content
    elif caller == "viewer":
        assert b"may comment" in response.content
    assert Comment.objects.filter(incident=incident).count() == int(stored)


# caller -> status of each workflow form (the incident page again with the refusal for a viewer)
WORKFLOW: dict[str, int | str] = {
    "anonymous": LOGIN,
    "intake": LOGIN,
    "norole": 403,
    "viewer": 403,
    "responder": 302,
    "approver": 302,
}


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("step", ["acknowledge", "assign", "resolve", "reopen"])
def test_workflow_forms(proposal: ActionProposal, caller: str, step: str) -> None:
    incident = proposal.investigation.incident
    if step == "reopen":
        Incident.objects.filter(pk=incident.pk).update(status=Incident.Status.RESOLVED)
    before = AuditEvent.objects.filter(verb__in=[f"incident.{v}" for v in WORKFLOW_VERBS]).count()
    response = _client(caller).post(f"/incidents/{incident.pk}/{step}/", {"assignee": "", "note": ""})
    if step == "assign" and WORKFLOW[caller] == 302:
        # Unassigned already: refused as no change (409), by a responder or an approver alike.
        _check(response.status_code, "", 409)
        return
    _check(response.status_code, response.get("Location", ""), WORKFLOW[caller])
    changed = AuditEvent.objects.filter(verb__in=[f"incident.{v}" for v in WORKFLOW_VERBS]).count() - before
    assert changed == int(WORKFLOW[caller] == 302)


WORKFLOW_VERBS = ("acknowledged", "assigned", "resolved", "reopened")


def test_a_role_is_needed_on_every_page_route() -> None:
    """Every route of the pages app is in the matrix above (a new page cannot skip it)."""
    from frontend.urls import urlpatterns

    covered = {
        "home",
        "status",
        "integrations",
        "incidents",
        "incident",
        "incident-rerun",
        "incident-comment",
    }
    covered |= {"incident-progress"}
    covered |= {"explorer", "action", "search", "login", "logout", "actions"}
    covered |= {"incident-acknowledge", "incident-assign", "incident-resolve", "incident-reopen"}
    assert {p.name for p in urlpatterns} == covered
