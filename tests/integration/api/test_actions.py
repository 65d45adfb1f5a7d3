"""Actions: list, detail with audit trail, approve / reject enforced by the approval service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from celery_app.app import app
from rca.core.actions import ActionTier
from rca.core.grounding import Grounding
from rca.incidents import approvals
from rca.incidents.approvals import EXECUTE_TASK, ApprovalError
from rca.incidents.models import ActionProposal, AuditEvent
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _repository(settings: Any) -> None:
    factories.configure_repository(settings)


def url(proposal: ActionProposal, verb: str = "") -> str:
    return f"/api/v1/actions/{proposal.pk}/" + (f"{verb}/" if verb else "")


def verbs(proposal: ActionProposal) -> list[str]:
    return list(
        AuditEvent.objects.filter(target_type="incidents.actionproposal", target_id=str(proposal.pk))
        .order_by("at", "id")
        .values_list("verb", flat=True)
    )


@pytest.fixture
def grounded() -> ActionProposal:
    """A pull-request proposal of a grounded conclusion."""
    return factories.proposal(factories.investigation(grounding=Grounding.GROUNDED, raw_confidence=0.92))


@pytest.fixture
def partial() -> ActionProposal:
    """A patch proposal of a partially grounded conclusion (capped at 0.84)."""
    return factories.proposal(
        factories.investigation(grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.95)
    )


@pytest.fixture
def ungrounded() -> ActionProposal:
    """An ungrounded conclusion (capped at 0.64: issue)."""
    return factories.proposal(factories.investigation(grounding=Grounding.UNGROUNDED, raw_confidence=0.99))


def test_list_and_filters(viewer: APIClient, grounded: ActionProposal, ungrounded: ActionProposal) -> None:
    body = viewer.get("/api/v1/actions/").json()
    assert [r["id"] for r in body["results"]] == [ungrounded.pk, grounded.pk]
    by_tier = viewer.get("/api/v1/actions/", {"tier": "issue"}).json()["results"]
    assert [r["id"] for r in by_tier] == [ungrounded.pk]
    incident = grounded.investigation.incident_id
    assert [r["id"] for r in viewer.get("/api/v1/actions/", {"incident": incident}).json()["results"]] == [
        grounded.pk
    ]
    assert viewer.get("/api/v1/actions/", {"status": "approved"}).json()["count"] == 0
    assert viewer.get("/api/v1/actions/", {"tier": "nuke"}).status_code == 400
    assert viewer.get("/api/v1/actions/", {"incident": "x"}).status_code == 400


def test_detail_shows_the_ceiling_and_audit_trail(
    viewer: APIClient, approver: APIClient, partial: ActionProposal
) -> None:
    body = viewer.get(url(partial)).json()
    assert (body["tier"], body["max_allowed_tier"], body["allowed_tier"]) == ("patch", "patch", "patch")
    assert body["audit"] == []
    # A cpu_saturation fault citing no change has no patch to build: refused (audited), so an issue.
    refused = approver.post(url(partial, "approve"), {"reason": "evidence is clear"}, format="json")
    assert (refused.status_code, refused.json()["code"]) == (409, "not_buildable")
    approver.post(url(partial, "approve"), {"reason": "evidence is clear", "tier": "issue"}, format="json")
    audit = viewer.get(url(partial)).json()["audit"]
    assert [e["verb"] for e in audit] == [
        "action.approval_refused",
        "action.approved",
        "action.execution_queued",
    ]
    assert audit[1]["detail"] == {
        "reason": "evidence is clear",
        "tier": "issue",
        "proposed_tier": "patch",
        "allowed_tier": "patch",
    }


def test_unknown_action_is_404(viewer: APIClient, approver: APIClient) -> None:
    assert viewer.get("/api/v1/actions/777777/").status_code == 404
    assert approver.post("/api/v1/actions/777777/approve/", {"reason": "x"}, format="json").status_code == 404
    assert approver.post("/api/v1/actions/777777/reject/", {"reason": "x"}, format="json").status_code == 404


def test_approver_approves_and_the_execution_is_queued(approver: APIClient, grounded: ActionProposal) -> None:
    response = approver.post(url(grounded, "approve"), {"reason": "PR is right"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "approved"
    assert body["tier"] == "pull_request"
    assert body["decided_by"].startswith("approver")
    assert body["reason"] == "PR is right"
    assert verbs(grounded) == ["action.approved", "action.execution_queued"]
    approved = AuditEvent.objects.get(verb="action.approved")
    assert approved.actor_id is not None
    assert approved.detail == {
        "reason": "PR is right",
        "tier": "pull_request",
        "proposed_tier": "pull_request",
        "allowed_tier": "pull_request",
    }


def test_approving_at_a_lower_tier_is_allowed(approver: APIClient, partial: ActionProposal) -> None:
    response = approver.post(
        url(partial, "approve"), {"reason": "issue first", "tier": "issue"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["tier"] == "issue"
    assert AuditEvent.objects.get(verb="action.approved").detail["proposed_tier"] == "patch"


@pytest.fixture
def executor(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """What approval sends to `rootline.execute_action`: its `delay` records instead of queueing."""
    sent: list[int] = []
    monkeypatch.setattr(app.tasks[EXECUTE_TASK], "delay", sent.append)
    return sent


def test_approval_queues_the_execution_task_when_one_is_registered(
    approver: APIClient,
    grounded: ActionProposal,
    executor: list[int],
    django_capture_on_commit_callbacks: Callable[..., Any],
    settings: Any,
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = approver.post(url(grounded, "approve"), {"reason": "go"}, format="json")
    finally:
        app.conf.task_always_eager = False
    assert response.status_code == 200
    assert executor == [grounded.pk]
    assert verbs(grounded) == ["action.approved", "action.execution_queued"]


@pytest.mark.parametrize("role", ["viewer", "responder"])
def test_approval_by_a_non_approver_is_403_and_audited(
    client_for: Callable[[str | None], APIClient], grounded: ActionProposal, role: str
) -> None:
    response = client_for(role).post(url(grounded, "approve"), {"reason": "me too"}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    grounded.refresh_from_db()
    assert grounded.status == "proposed"
    assert verbs(grounded) == ["action.approval_refused"]


def test_approval_above_the_allowed_tier_is_refused_with_the_reason(
    approver: APIClient, partial: ActionProposal
) -> None:
    response = approver.post(
        url(partial, "approve"), {"reason": "ship it", "tier": "pull_request"}, format="json"
    )
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "above_allowed_tier"
    assert body["allowed_tier"] == "patch"
    assert body["requested_tier"] == "pull_request"
    assert "partially_grounded" in body["detail"]
    partial.refresh_from_db()
    assert partial.status == "proposed"
    assert verbs(partial) == ["action.approval_refused"]


def test_ungrounded_conclusion_is_never_approved_as_patch_or_pull_request(
    approver: APIClient, ungrounded: ActionProposal
) -> None:
    assert approver.get(url(ungrounded)).json()["allowed_tier"] == "issue"
    for tier in ("patch", "pull_request"):
        response = approver.post(
            url(ungrounded, "approve"), {"reason": "trust me", "tier": tier}, format="json"
        )
        assert response.status_code == 409, tier
        assert response.json()["allowed_tier"] == "issue"


def test_a_tampered_proposal_row_cannot_lift_the_ceiling(approver: APIClient) -> None:
    # Ungrounded evidence, but the proposal row claims pull_request everywhere (a shadow-mode run, or
    # a hand edit): the ceiling is derived again from the investigation, so the request is refused.
    inv = factories.investigation(grounding=Grounding.UNGROUNDED, raw_confidence=0.99)
    proposal = factories.proposal(inv, tier="pull_request", max_allowed_tier="pull_request")
    assert approvals.allowed_tier(proposal) is ActionTier.ISSUE
    response = approver.post(url(proposal, "approve"), {"reason": "as proposed"}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "above_allowed_tier"


def test_no_confident_root_cause_only_allows_notify(approver: APIClient) -> None:
    proposal = factories.proposal(factories.investigation(confident=False), tier="notify")
    refused = approver.post(url(proposal, "approve"), {"reason": "x", "tier": "issue"}, format="json")
    assert refused.status_code == 409
    assert (
        approver.post(url(proposal, "approve"), {"reason": "tell the team"}, format="json").status_code == 200
    )


def test_double_approval_is_refused(approver: APIClient, client_for: Any, grounded: ActionProposal) -> None:
    assert approver.post(url(grounded, "approve"), {"reason": "yes"}, format="json").status_code == 200
    again = client_for("approver").post(url(grounded, "approve"), {"reason": "yes again"}, format="json")
    assert again.status_code == 409
    assert again.json()["code"] == "already_decided"
    assert "approved by approver" in again.json()["detail"]
    reject = approver.post(url(grounded, "reject"), {"reason": "changed my mind"}, format="json")
    assert reject.status_code == 409
    assert verbs(grounded) == [
        "action.approved",
        "action.execution_queued",
        "action.approval_refused",
        "action.rejection_refused",
    ]


def test_responder_rejects_with_a_reason(responder: APIClient, grounded: ActionProposal) -> None:
    response = responder.post(url(grounded, "reject"), {"reason": "wrong service"}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "rejected"
    event = AuditEvent.objects.get(verb="action.rejected")
    assert event.detail["reason"] == "wrong service"
    assert event.actor_label.startswith("responder")


def test_rejection_by_a_viewer_is_403(viewer: APIClient, grounded: ActionProposal) -> None:
    assert viewer.post(url(grounded, "reject"), {"reason": "no"}, format="json").status_code == 403
    assert verbs(grounded) == ["action.rejection_refused"]


@pytest.mark.parametrize(
    ("data", "field"),
    [({}, "reason"), ({"reason": "   "}, "reason"), ({"reason": "ok", "tier": "rm -rf"}, "tier")],
)
def test_bad_decision_bodies_are_400(
    approver: APIClient, grounded: ActionProposal, data: dict[str, str], field: str
) -> None:
    response = approver.post(url(grounded, "approve"), data, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"]
    assert approver.post(url(grounded, "reject"), {"reason": ""}, format="json").status_code == 400


def test_superuser_counts_as_approver(grounded: ActionProposal) -> None:
    admin = factories.user(None, is_superuser=True)
    approvals.approve(grounded, admin, "superuser decision")
    assert grounded.status == "approved"


def test_service_refuses_a_blank_reason_and_anonymous_users(grounded: ActionProposal) -> None:
    from django.contrib.auth.models import AnonymousUser

    with pytest.raises(ApprovalError) as refused:
        approvals.approve(grounded, factories.user("approver"), "  ")
    assert refused.value.code == ApprovalError.REASON_REQUIRED
    with pytest.raises(ApprovalError) as anonymous:
        approvals.reject(grounded, AnonymousUser(), "no")
    assert anonymous.value.code == ApprovalError.FORBIDDEN
    assert AuditEvent.objects.filter(verb="action.rejection_refused", actor_label="anonymous").exists()


def test_inactive_user_has_no_role(grounded: ActionProposal) -> None:
    account: User = factories.user("approver", is_active=False)
    assert approvals.role_of(account) is None


def test_session_authenticated_decisions_need_csrf(grounded: ActionProposal) -> None:
    account = factories.user("approver")
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(account)
    refused = client.post(url(grounded, "approve"), {"reason": "csrf?"}, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    client.get("/login/")  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    response = client.post(
        url(grounded, "approve"), {"reason": "csrf!"}, format="json", HTTP_X_CSRFTOKEN=token
    )
    assert response.status_code == 200
