"""Approving and rejecting from the action page: the server decides, through rca.incidents.approvals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from rca.core.grounding import Grounding
from rca.incidents.models import ActionProposal, AuditEvent
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _repository(settings: Any) -> None:
    factories.configure_repository(settings)


def _proposal(**investigation: object) -> ActionProposal:
    return factories.proposal(factories.investigation(**investigation))  # type: ignore[arg-type]


def _verbs(proposal: ActionProposal) -> list[str]:
    return list(
        AuditEvent.objects.filter(target_type="incidents.actionproposal", target_id=str(proposal.pk))
        .order_by("at", "id")
        .values_list("verb", flat=True)
    )


def test_an_approver_approves_an_allowed_action(approver: Client) -> None:
    proposal = _proposal()
    response = approver.post(
        f"/actions/{proposal.pk}/", {"decision": "approve", "reason": "evidence is clear"}
    )
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "approved"
    assert "action.approved" in _verbs(proposal)
    page = approver.get(f"/actions/{proposal.pk}/").content.decode()
    assert "action.approved" in page
    assert "evidence is clear" in page
    assert 'id="approve-button" disabled' in page  # once only


def test_a_viewer_sees_approve_disabled_and_is_refused_by_the_server(viewer: Client) -> None:
    proposal = _proposal()
    page = viewer.get(f"/actions/{proposal.pk}/").content.decode()
    assert 'id="approve-button" disabled' in page
    assert "Only an approver may approve" in page
    response = viewer.post(f"/actions/{proposal.pk}/", {"decision": "approve", "reason": "let me"})
    assert response.status_code == 403
    assert "may approve an action" in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == "proposed"
    assert _verbs(proposal) == ["action.approval_refused"]


def test_approval_above_the_allowed_tier_is_refused(approver: Client) -> None:
    # Ungrounded: the ceiling is issue whatever the confidence, so a pull request is refused.
    proposal = _proposal(grounding=Grounding.UNGROUNDED, raw_confidence=0.95)
    page = approver.get(f"/actions/{proposal.pk}/")
    tiers = {t["value"]: t["allowed"] for t in page.context["tiers"]}
    assert tiers == {"notify": True, "issue": True, "patch": False, "pull_request": False}
    assert 'value="pull_request" disabled' in page.content.decode()
    response = approver.post(
        f"/actions/{proposal.pk}/", {"decision": "approve", "reason": "ship it", "tier": "pull_request"}
    )
    assert response.status_code == 403
    assert "above what the evidence allows" in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == "proposed"
    # at the allowed tier it goes through
    ok = approver.post(
        f"/actions/{proposal.pk}/", {"decision": "approve", "reason": "an issue", "tier": "issue"}
    )
    assert ok.status_code == 302
    proposal.refresh_from_db()
    assert (proposal.status, proposal.tier) == ("approved", "issue")


def test_a_responder_rejects_and_a_reason_is_required(client_as: Callable[[str | None], Client]) -> None:
    responder = client_as("responder")
    proposal = _proposal()
    empty = responder.post(f"/actions/{proposal.pk}/", {"decision": "reject", "reason": "  "})
    assert empty.status_code == 400
    assert "reason is required" in empty.content.decode()
    done = responder.post(f"/actions/{proposal.pk}/", {"decision": "reject", "reason": "wrong service"})
    assert done.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "rejected"
    again = responder.post(f"/actions/{proposal.pk}/", {"decision": "reject", "reason": "twice"})
    assert again.status_code == 409


def test_a_malformed_decision_is_400(approver: Client) -> None:
    proposal = _proposal()
    response = approver.post(f"/actions/{proposal.pk}/", {"decision": "delete", "reason": "x"})
    assert response.status_code == 400


def test_decisions_need_a_csrf_token() -> None:
    proposal = _proposal()
    client = Client(enforce_csrf_checks=True)
    account = factories.user("approver")
    client.force_login(account)
    refused = client.post(f"/actions/{proposal.pk}/", {"decision": "approve", "reason": "no token"})
    assert refused.status_code == 403
    proposal.refresh_from_db()
    assert proposal.status == "proposed"
    page = client.get(f"/actions/{proposal.pk}/")
    token = page.context["csrf_token"]
    accepted = client.post(
        f"/actions/{proposal.pk}/",
        {"decision": "approve", "reason": "with token", "csrfmiddlewaretoken": token},
    )
    assert accepted.status_code == 302


def test_a_superuser_counts_as_an_approver() -> None:
    proposal = _proposal()
    client = Client()
    client.force_login(User.objects.create_superuser("root-user", password="pw-123456!"))
    assert client.post(f"/actions/{proposal.pk}/", {"decision": "approve", "reason": "ok"}).status_code == 302
