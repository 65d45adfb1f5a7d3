"""The notify executor against recorded Slack incoming-webhook answers, and e-mail through Django."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx
from django.core import mail

from rca.actions.executors import TransientActionError, execute
from rca.core.grounding import Grounding
from rca.incidents.models import ActionProposal
from rca.integrations.email.config import EmailConfig
from rca.integrations.slack.config import SlackConfig
from tests.integration.actions import recorded
from tests.integration.actions.conftest import verbs
from tests.integration.actions.recorded import API, REPO
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

HOOK = "https://hooks.slack.com/services/T0001/B0002/s3cretPathToken"
SLACK = SlackConfig(HOOK)
ONCALL = EmailConfig(("oncall@example.com",))
Approve = Callable[..., ActionProposal]


def no_root_cause() -> Any:
    """A "no confident root cause" conclusion: notify is the only tier it allows."""
    return factories.investigation(confident=False, grounding=Grounding.UNGROUNDED, raw_confidence=0.2)


def run(proposal: ActionProposal, **kwargs: Any) -> ActionProposal:
    execute(proposal.pk, **kwargs)
    proposal.refresh_from_db()
    return proposal


def test_slack_ok_posts_the_outcome_the_chain_and_the_link(configure: Any, approve: Approve) -> None:
    configure(channels=(SLACK,))
    proposal = approve("notify", no_root_cause(), body="No confident root cause: budget exhausted.")
    with respx.mock() as slack:
        route = slack.post(HOOK).mock(return_value=recorded.slack(200, "ok"))
        run(proposal)
    text = json.loads(route.calls[0].request.content)["text"]
    assert text.splitlines()[1] == "No confident root cause: budget exhausted."
    assert (
        "Evidence chain: 0 validating item(s); no change cited; ungrounded; capped confidence 0.20." in text
    )
    assert f"http://rootline.test/incidents/{proposal.investigation.incident_id}/" in text
    assert proposal.status == "done"
    assert proposal.execution["channels"] == ["slack"]
    assert proposal.execution["requests"][0]["url"] == "https://hooks.slack.com/***"  # the path is a secret
    assert verbs(proposal)[-1] == "action.execution_succeeded"


@pytest.mark.parametrize(("status", "code"), [(400, "invalid_payload"), (404, "no_service")])
def test_slack_errors_fail_the_action_with_slacks_code_and_no_secret(
    configure: Any, approve: Approve, status: int, code: str
) -> None:
    configure(channels=(SLACK,))
    proposal = approve("notify", no_root_cause())
    with respx.mock() as slack:
        route = slack.post(HOOK).mock(return_value=recorded.slack(status, code))
        run(proposal, final_attempt=False)
    assert route.call_count == 1
    assert proposal.status == "failed"
    assert f"HTTP {status}" in proposal.error
    assert code in proposal.error
    assert "s3cretPathToken" not in proposal.error


def test_slack_rate_limit_is_retried_after_the_wait_it_asks_for(configure: Any, approve: Approve) -> None:
    configure(channels=(SLACK,))
    proposal = approve("notify", no_root_cause())
    with respx.mock() as slack:
        route = slack.post(HOOK).mock(
            side_effect=[
                recorded.slack(429, "rate_limited", **{"retry-after": "0"}),
                recorded.slack(200, "ok"),
            ]
        )
        run(proposal)
    assert route.call_count == 2
    assert proposal.status == "done"


def test_slack_5xx_is_retried_by_the_task_and_surfaced(configure: Any, approve: Approve) -> None:
    configure(channels=(SLACK,))
    proposal = approve("notify", no_root_cause())
    with respx.mock() as slack:
        slack.post(HOOK).mock(return_value=recorded.slack(503, "service_unavailable"))
        with pytest.raises(TransientActionError):
            execute(proposal.pk, final_attempt=False)
    proposal.refresh_from_db()
    assert proposal.status == "executing"
    assert "HTTP 503" in proposal.error
    assert "s3cretPathToken" not in proposal.error


def test_without_configuration_the_notification_is_recorded_in_the_app_only(
    configure: Any, approve: Approve
) -> None:
    configure(github=None)
    proposal = approve("notify", no_root_cause())
    with respx.mock():  # nothing may leave the host
        run(proposal)
    assert proposal.status == "done"
    assert proposal.execution["channels"] == ["rootline"]
    assert "recorded in Rootline only" in proposal.execution["note"]
    assert proposal.execution["message"].startswith("Rootline: ")


def test_email_goes_through_djangos_backend_and_dry_run_sends_nothing(
    configure: Any, approve: Approve
) -> None:
    configure(channels=(ONCALL,))
    run(approve("notify", no_root_cause()))
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["oncall@example.com"]
    assert mail.outbox[0].subject.startswith("[Rootline] ")
    configure(channels=(SLACK, ONCALL), dry_run=True)
    with respx.mock():
        proposal = run(approve("notify", no_root_cause()))
    assert len(mail.outbox) == 1
    assert [(r["method"], r["sent"]) for r in proposal.execution["requests"]] == [
        ("POST", False),
        ("SMTP", False),
    ]


def test_an_opened_issue_is_announced_too_and_a_failed_announcement_keeps_the_issue(
    configure: Any, approve: Approve
) -> None:
    configure(channels=(SLACK,))
    announced, unannounced = approve("issue"), approve("issue")
    for proposal, slack_answer in (
        (announced, recorded.slack(200, "ok")),
        (unannounced, recorded.slack(404, "no_service")),
    ):
        with respx.mock(assert_all_called=False) as mock:
            mock.get(f"{API}/repos/{REPO}/issues").mock(return_value=httpx.Response(200, json=[]))
            mock.post(f"{API}/repos/{REPO}/issues").mock(
                return_value=httpx.Response(201, json=recorded.issue(7, proposal.title, "body"))
            )
            slack = mock.post(HOOK).mock(return_value=slack_answer)
            run(proposal)
        assert proposal.status == "done"
        assert proposal.artifact_url == f"{recorded.HTML}/issues/7"
        text = json.loads(slack.calls[0].request.content)["text"]
        assert f"issue: {recorded.HTML}/issues/7" in text
    assert announced.execution["notification"]["channels"] == ["slack"]
    assert "no_service" in unannounced.execution["notification"]["error"]
