"""From a recorded bad rollout to an approved pull request, in dry run, in a real browser.

ChangeRCA case 2023-09-22_1 (Online Boutique, several concurrent rollouts, one defective) is imported
and investigated by the engine; an approver opens its action and approves the pull request. The
execution task runs as it would on a worker (eagerly, in the web process, so that the recorded GitHub
answers below reach it): it reads the rollout's manifest history from GitHub and builds the revert,
and, in dry run, shows every write it would have made instead of making it. The page then shows the
revert diff, the pull request's body and the audit trail; a screenshot is saved.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from django.contrib.auth.models import User
from django.core.management import call_command

from celery_app.app import app
from rca.config import ActionsConfig
from rca.incidents.investigations import run_investigation
from rca.incidents.models import ActionProposal, Incident
from rca.integrations.github.config import GitHubConfig
from tests.browser.conftest import PASSWORD, Session
from tests.integration.actions import recorded
from tests.integration.actions.recorded import API, MANIFEST, REPO
from tests.integration.api import factories

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
CASE = ("changerca-ob", "changerca/2023-09-22_1")


@pytest.fixture
def rollout_case(transactional_db: None) -> Incident:
    """The recorded bad rollout, imported and investigated synchronously."""
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    call_command("import_case", *CASE, "--data", str(DATA), verbosity=0)
    incident = Incident.objects.get(recorded_case__case_id=CASE[1])
    run_investigation(incident.investigations.get().pk)
    return incident


@pytest.fixture
def dry_run_github(settings: Any) -> Iterator[respx.MockRouter]:
    """Dry run against the configured repository, its reads answered by recorded exchanges, and the
    execution task run eagerly on approval."""
    settings.ROOTLINE_ACTIONS = replace(
        ActionsConfig(),
        dry_run=True,
        github=GitHubConfig(repo=REPO, token="ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
        manifest_path="kubernetes-manifests/{service}.yaml",
    )
    app.conf.task_always_eager = True
    rollout = recorded.rollout_commit()
    try:
        with respx.mock(base_url=API, assert_all_called=False) as gh:
            gh.get(f"/repos/{REPO}/pulls").mock(return_value=httpx.Response(200, json=[]))
            gh.get(f"/repos/{REPO}/commits").mock(return_value=httpx.Response(200, json=[rollout]))
            gh.get(f"/repos/{REPO}/commits/{recorded.ROLLOUT_SHA}").mock(
                return_value=httpx.Response(200, json=rollout)
            )
            gh.get(f"/repos/{REPO}").mock(return_value=httpx.Response(200, json=recorded.repository()))
            gh.get(f"/repos/{REPO}/git/ref/heads/main").mock(
                return_value=httpx.Response(200, json=recorded.ref("main", recorded.BASE_SHA))
            )
            gh.get(url__regex=rf"/repos/{REPO}/git/ref/heads/rootline/action-\d+$").mock(
                return_value=recorded.error(404, "Not Found")
            )
            gh.get(f"/repos/{REPO}/contents/{MANIFEST}").mock(
                return_value=httpx.Response(200, json=recorded.contents(MANIFEST, recorded.MANIFEST_V2))
            )
            yield gh
    finally:
        app.conf.task_always_eager = False


def test_a_bad_rollout_becomes_an_approved_pull_request_in_dry_run(
    rollout_case: Incident,
    dry_run_github: respx.MockRouter,
    sessions: list[Session],
    browser: Any,
    live_server: Any,
    artifacts: Path,
) -> None:
    investigation = rollout_case.investigations.get()
    proposal = investigation.proposals.get()
    # The engine's conclusion: adservice's rollout, grounded by its canary and the deploy citation.
    assert (investigation.exit, investigation.grounding) == ("confident", "grounded")
    assert investigation.root_cause_entity == "adservice"
    assert investigation.evidence_chain["citation"]["kind"] == "deploy"
    assert proposal.tier == "pull_request"

    factories.user("approver", name="alice")
    alice_account = User.objects.get(username="alice")
    alice_account.set_password(PASSWORD)
    alice_account.save()
    alice = Session(browser, live_server.url, artifacts, "alice")
    sessions.append(alice)
    page = alice.page
    alice.login("alice")

    alice.goto(f"/actions/{proposal.pk}/")
    assert page.locator("#approve-tier").input_value() == "pull_request"
    page.fill("#approve-reason", "the adservice v2 canary is worse than v1; roll it back")
    page.click("#approve-button")
    page.wait_for_selector(".msg-success")

    # Executed on approval, in dry run: the page shows what would have been sent.
    assert page.locator("#action-status").inner_text() == "done"
    assert "Dry run" in page.locator("#dry-run-banner").inner_text()
    diff = page.locator("#action-diff").inner_text()
    assert f"--- a/{MANIFEST}" in diff
    assert "-  replicas: 4\n+  replicas: 5" in diff
    assert "+          image: registry.example.com/boutique/adservice:v1-59dcc9f97" in diff
    body = page.locator("#artifact-body").inner_text()
    assert body.startswith("Confident: adservice is the root cause")
    assert "Rolls back the deploy v2-fd6989b7c of adservice" in body
    assert f"<!-- rootline:action:{proposal.pk} -->" in body
    requests = page.locator("#execution-requests").inner_text()
    assert requests.count("not sent (dry run)") == 4  # branch, commit, pull request, label
    assert f"POST {API}/repos/{REPO}/pulls" in requests
    trail = page.locator("#audit-trail").inner_text()
    for verb in ("action.approved", "action.execution_queued", "action.execution_started"):
        assert verb in trail
    assert "action.execution_succeeded" in trail
    page.locator("#execution").scroll_into_view_if_needed()
    alice.shot("09-action-pull-request-dry-run")

    proposal.refresh_from_db()
    assert proposal.status == ActionProposal.Status.DONE
    assert proposal.artifact_url == ""
    # Only reads reached GitHub; every write stayed on the page.
    assert {call.request.method for call in dry_run_github.calls} == {"GET"}
