"""Nothing executes without an approval of the tier it runs, whatever reaches the queue; a redelivered
task makes no second artifact.

The executor checks for itself (rca.actions.executors.refusal): the first tests replace the four
executors with recorders to show which one ran, if any; the last two send the task through Redis to
a real Celery worker, as a message put on the queue by hand would arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from celery_app.app import app
from celery_app.tasks import execute_action
from rca.actions import executors
from rca.actions.executors import Artifact, execute
from rca.core.actions import ActionTier
from rca.core.grounding import Grounding
from rca.incidents import approvals
from rca.incidents.models import ActionProposal, AuditEvent
from rca.incidents.services import record_audit
from tests.integration.actions.conftest import deploy_investigation, ungrounded_investigation, verbs
from tests.integration.api import factories
from tests.integration.pipeline.worker import start_worker, stop, wait_for

pytestmark = [pytest.mark.integration]
Approve = Callable[..., ActionProposal]


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which executors ran: each tier's executor replaced by one that records its tier."""
    calls: list[str] = []
    for tier in ActionTier:

        def record(proposal: ActionProposal, config: Any, journal: Any, tier: ActionTier = tier) -> Artifact:
            if journal.reads:  # the approval check runs it with reads withheld (rca.actions.preview)
                calls.append(tier.value)
            return Artifact(tier.value)

        monkeypatch.setitem(executors.EXECUTORS, tier, record)
    return calls


@pytest.mark.django_db
@pytest.mark.parametrize("tier", [t.value for t in ActionTier])
def test_an_approved_action_runs_the_executor_of_its_tier_and_only_that_one(
    configure: Any, approve: Approve, ran: list[str], tier: str
) -> None:
    proposal = approve(tier)
    assert execute(proposal.pk)["status"] == "done"
    assert ran == [tier]


@pytest.mark.django_db
def test_a_proposed_or_rejected_action_runs_nothing(configure: Any, ran: list[str]) -> None:
    proposed = factories.proposal(deploy_investigation())
    rejected = factories.proposal(deploy_investigation())
    approvals.reject(rejected, factories.user("responder"), "wrong service")
    for proposal, status in ((proposed, "proposed"), (rejected, "rejected")):
        result = execute(proposal.pk)
        assert result == {
            "action": proposal.pk,
            "status": "refused",
            "reason": f"the action is {status}, not approved",
        }
        proposal.refresh_from_db()
        assert proposal.status == status
        assert verbs(proposal)[-1] == "action.execution_refused"
    assert ran == []
    assert execute(987654)["status"] == "missing"


@pytest.mark.django_db
def test_an_action_approved_at_one_tier_cannot_run_another(
    configure: Any, approve: Approve, ran: list[str]
) -> None:
    proposal = approve("issue")
    ActionProposal.objects.filter(pk=proposal.pk).update(tier="pull_request")  # edited after approval
    assert execute(proposal.pk)["reason"] == "it was approved as issue, not pull_request"
    proposal.refresh_from_db()
    assert proposal.status == "failed"
    assert ran == []


@pytest.mark.django_db
def test_an_approval_without_its_audit_record_runs_nothing(configure: Any, ran: list[str]) -> None:
    proposal = factories.proposal(deploy_investigation(), status="approved", tier="issue")
    assert execute(proposal.pk)["reason"] == "no approval of this action is on record"
    assert ran == []


def forged(investigation: Any, tier: str) -> ActionProposal:
    """An action that reads as approved at `tier`, approval record included, as if the approval
    service had been bypassed (a hand-edited row, a shadow-mode run, a bug)."""
    proposal = factories.proposal(investigation, tier=tier, max_allowed_tier=tier, status="approved")
    record_audit("action.approved", proposal, actor_label="forger", detail={"tier": tier})
    return proposal


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("make", "tier", "why"),
    [
        (ungrounded_investigation, "patch", "patch is above what the evidence allows (issue)"),
        (ungrounded_investigation, "pull_request", "pull_request is above what the evidence allows (issue)"),
        (
            lambda: factories.investigation(grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.99),
            "pull_request",
            "pull_request is above what the evidence allows (patch)",
        ),
        (
            lambda: factories.investigation(confident=False),  # grounded row, but no root cause named
            "issue",
            "issue is above what the evidence allows (notify)",
        ),
    ],
)
def test_the_executor_refuses_a_forged_approval_above_the_allowed_tier(
    configure: Any, ran: list[str], make: Callable[[], Any], tier: str, why: str
) -> None:
    proposal = forged(make(), tier)
    assert execute_action.apply(args=[proposal.pk]).get() == {
        "action": proposal.pk,
        "status": "refused",
        "reason": why,
    }
    assert ran == []


# --- through the queue, to a real worker -----------------------------------------------------------------


@pytest.fixture
def worker(tmp_path: Path, transactional_db: None) -> Iterator[None]:
    """A Celery worker on the test database and Redis; the queue is emptied first."""
    app.control.purge()
    proc = start_worker(tmp_path / "worker.log", "actions")
    try:
        yield
    finally:
        stop(proc)


def _audit(proposal: ActionProposal, verb: str) -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(
            target_type="incidents.actionproposal", target_id=str(proposal.pk), verb=verb
        ).order_by("id")
    )


@pytest.mark.slow
def test_a_task_sent_straight_to_the_queue_above_the_allowed_tier_is_refused_by_the_worker(
    worker: None,
) -> None:
    proposal = forged(ungrounded_investigation(), "pull_request")
    execute_action.delay(proposal.pk)
    wait_for(lambda: bool(_audit(proposal, "action.execution_refused")), 60, "the worker to refuse it")
    proposal.refresh_from_db()
    assert proposal.status == "failed"
    assert proposal.error == "refused: pull_request is above what the evidence allows (issue)"
    assert not _audit(proposal, "action.execution_started")
    assert (proposal.artifact_url, proposal.patch, proposal.execution) == ("", "", {})


@pytest.mark.slow
def test_a_redelivered_task_makes_no_second_artifact(worker: None) -> None:
    approver = factories.user("approver")
    proposal = approvals.approve(
        factories.proposal(deploy_investigation(), body="Confident: adservice is the root cause."),
        approver,
        "tell the team",
        ActionTier.NOTIFY,
    )
    # Approving queued the task on commit; the same message now arrives a second time.
    execute_action.delay(proposal.pk)
    wait_for(lambda: bool(_audit(proposal, "action.execution_skipped")), 60, "the redelivery to be handled")
    assert len(_audit(proposal, "action.execution_succeeded")) == 1
    assert len(_audit(proposal, "action.execution_started")) == 1
    proposal.refresh_from_db()
    assert proposal.status == "done"
    assert proposal.execution["kind"] == "notification"
