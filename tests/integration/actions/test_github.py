"""Issue, patch and pull-request executors against recorded GitHub REST exchanges.

The executors run exactly as in production (the task body, the shared HTTP client, httpx); only the
network is replaced by respx, which also fails the test on any request no route expects (a merge,
say, or a second issue).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx
from rest_framework.test import APIClient

from celery_app.tasks import execute_action
from rca.actions.executors import TransientActionError, execute
from rca.core.grounding import Grounding
from rca.incidents.approvals import ApprovalError
from rca.incidents.models import ActionProposal
from tests.integration.actions import recorded
from tests.integration.actions.conftest import TOKEN, verbs
from tests.integration.actions.recorded import API, MANIFEST, REPO
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

Approve = Callable[..., ActionProposal]
ISSUES = f"/repos/{REPO}/issues"


def run(proposal: ActionProposal) -> dict[str, Any]:
    """Run the execution task's body in this process, as a worker would."""
    result = execute_action.apply(args=[proposal.pk]).get()
    proposal.refresh_from_db()
    return dict(result)


def body_of(route: respx.Route, n: int = 0) -> Any:
    return json.loads(route.calls[n].request.content)


# --- issue ------------------------------------------------------------------------------------------


def test_an_approved_issue_is_opened_with_the_evidence_and_a_marker_and_never_twice(
    configure: Any, approve: Approve
) -> None:
    proposal = approve("issue")
    marker = f"<!-- rootline:action:{proposal.pk} -->"
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        listing = gh.get(ISSUES).mock(
            return_value=httpx.Response(
                200,
                json=[
                    recorded.issue(3, "unrelated", "no marker here"),
                    recorded.issue(4, "a pull request", marker, pull=True),  # PRs are not issues
                ],
            )
        )
        created = gh.post(ISSUES).mock(
            side_effect=lambda request: httpx.Response(
                201, json=recorded.issue(42, proposal.title, json.loads(request.content)["body"])
            )
        )
        assert run(proposal)["status"] == "done"
        # a redelivered task: the action is done, nothing is sent again
        assert run(proposal)["status"] == "done"
    assert created.call_count == 1
    assert listing.call_count == 1
    request = created.calls[0].request
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["accept"] == "application/vnd.github+json"
    assert request.headers["x-github-api-version"] == "2022-11-28"
    assert dict(listing.calls[0].request.url.params) == {
        "state": "all",
        "labels": "rootline",
        "per_page": "100",
        "sort": "created",
        "direction": "desc",
    }
    sent = body_of(created)
    assert sent["title"] == proposal.title
    assert sent["labels"] == ["rootline"]
    assert sent["body"].endswith(marker)
    assert proposal.body in sent["body"]
    assert f"http://rootline.test/incidents/{proposal.investigation.incident_id}/" in sent["body"]
    assert proposal.status == "done"
    assert proposal.artifact_url == f"{recorded.HTML}/issues/42"
    assert verbs(proposal) == [
        "action.approved",
        "action.execution_queued",
        "action.execution_started",
        "action.execution_succeeded",
        "action.execution_skipped",
    ]


def test_after_a_crash_the_redelivered_task_finds_the_issue_by_its_marker(
    configure: Any, approve: Approve
) -> None:
    proposal = approve("issue")
    # The worker died after GitHub opened the issue and before the row was updated.
    ActionProposal.objects.filter(pk=proposal.pk).update(status="executing")
    body = f"{proposal.body}\n\n<!-- rootline:action:{proposal.pk} -->"
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        gh.get(ISSUES).mock(return_value=httpx.Response(200, json=[recorded.issue(42, proposal.title, body)]))
        created = gh.post(ISSUES).mock(return_value=httpx.Response(201, json={}))
        assert run(proposal)["status"] == "done"
    assert created.call_count == 0
    assert proposal.artifact_url == f"{recorded.HTML}/issues/42"
    assert proposal.execution["found"] is True


def test_a_5xx_on_create_is_not_repeated_blindly_the_retry_finds_the_issue_it_made(
    configure: Any, approve: Approve
) -> None:
    proposal = approve("issue")
    made = recorded.issue(42, proposal.title, f"... <!-- rootline:action:{proposal.pk} -->")
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        gh.get(ISSUES).mock(side_effect=[httpx.Response(200, json=[]), httpx.Response(200, json=[made])])
        created = gh.post(ISSUES).mock(return_value=recorded.error(502, "Server Error"))
        with pytest.raises(TransientActionError, match="502"):
            execute(proposal.pk, final_attempt=False)
        proposal.refresh_from_db()
        assert proposal.status == "executing"
        assert "502" in proposal.error
        assert execute(proposal.pk)["status"] == "done"  # the task's retry
    assert created.call_count == 1  # the POST may have landed: it is looked up, not repeated
    proposal.refresh_from_db()
    assert proposal.artifact_url == f"{recorded.HTML}/issues/42"
    assert verbs(proposal)[-3:] == [
        "action.execution_failed",
        "action.execution_started",
        "action.execution_succeeded",
    ]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "Bad credentials"),
        (403, "Resource not accessible by integration"),
        (404, "Not Found"),
        (422, "Validation Failed"),
    ],
)
def test_a_refused_write_fails_the_action_with_githubs_reason_and_is_not_retried(
    configure: Any, approve: Approve, status: int, message: str
) -> None:
    proposal = approve("issue")
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        gh.get(ISSUES).mock(return_value=httpx.Response(200, json=[]))
        created = gh.post(ISSUES).mock(return_value=recorded.error(status, message))
        result = execute(proposal.pk, final_attempt=False)  # a permanent failure: no retry either way
    proposal.refresh_from_db()
    assert result["status"] == "failed"
    assert created.call_count == 1
    assert proposal.status == "failed"
    assert f"HTTP {status}" in proposal.error
    assert message in proposal.error
    assert TOKEN not in proposal.error
    assert verbs(proposal)[-1] == "action.execution_failed"


def test_rate_limits_are_retried_with_backoff_then_succeed(configure: Any, approve: Approve) -> None:
    proposal = approve("issue")
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        gh.get(ISSUES).mock(
            side_effect=[recorded.error(503, "Service Unavailable"), httpx.Response(200, json=[])]
        )
        created = gh.post(ISSUES).mock(
            side_effect=[
                recorded.error(429, "API rate limit exceeded", **{"retry-after": "0"}),
                httpx.Response(201, json=recorded.issue(43, proposal.title, "b")),
            ]
        )
        assert run(proposal)["status"] == "done"
    assert created.call_count == 2
    assert proposal.artifact_url.endswith("/issues/43")


def test_a_rate_limit_that_outlasts_the_retries_is_left_to_the_task_then_surfaced(
    configure: Any, approve: Approve
) -> None:
    proposal = approve("issue")
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        gh.get(ISSUES).mock(return_value=httpx.Response(200, json=[]))
        created = gh.post(ISSUES).mock(
            return_value=recorded.error(429, "API rate limit exceeded", **{"retry-after": "0"})
        )
        with pytest.raises(TransientActionError, match="429"):
            execute(proposal.pk, final_attempt=False)
        assert execute(proposal.pk, final_attempt=True)["status"] == "failed"
    assert created.call_count == 6  # 3 attempts per task run
    proposal.refresh_from_db()
    assert proposal.status == "failed"
    assert "HTTP 429" in proposal.error


# --- patch ------------------------------------------------------------------------------------------


def test_a_commit_citation_gets_the_revert_of_that_commit(configure: Any, approve: Approve) -> None:
    inv = factories.investigation()  # grounded, citing commit abc123
    proposal = approve("patch", inv)
    old = "timeout: 5s\npool: 20\nretries: 3\n"
    new = "timeout: 5s\npool: 2\nretries: 3\n"
    fetched = recorded.commit(
        "abc123" + "0" * 34, "Shrink the pool", [recorded.commit_file("db.yaml", old, new)]
    )
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        route = gh.get(f"/repos/{REPO}/commits/abc123").mock(return_value=httpx.Response(200, json=fetched))
        assert run(proposal)["status"] == "done"
    assert route.call_count == 1  # a read; a patch is never pushed
    assert proposal.patch == (
        "diff --git a/db.yaml b/db.yaml\n--- a/db.yaml\n+++ b/db.yaml\n"
        "@@ -1,3 +1,3 @@\n timeout: 5s\n-pool: 2\n+pool: 20\n retries: 3\n"
    )
    assert "abc123" in proposal.execution["patch_note"]
    assert proposal.artifact_url == ""


def test_a_deploy_citation_gets_the_rollback_of_its_manifest(configure: Any, approve: Approve) -> None:
    proposal = approve("patch")
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        history = gh.get(f"/repos/{REPO}/commits").mock(
            return_value=httpx.Response(200, json=[recorded.rollout_commit()])
        )
        gh.get(f"/repos/{REPO}/commits/{recorded.ROLLOUT_SHA}").mock(
            return_value=httpx.Response(200, json=recorded.rollout_commit())
        )
        run(proposal)
    assert dict(history.calls[0].request.url.params) == {
        "path": MANIFEST,
        "until": "2023-09-22T15:57:41Z",
        "per_page": "1",
    }
    assert f"--- a/{MANIFEST}\n+++ b/{MANIFEST}\n" in proposal.patch
    assert "-  replicas: 4\n+  replicas: 5\n" in proposal.patch
    assert "+          image: registry.example.com/boutique/adservice:v1-59dcc9f97\n" in proposal.patch
    assert "Rolls back the deploy v2-fd6989b7c of adservice" in proposal.execution["patch_note"]


def test_without_a_citation_the_patch_cannot_be_approved_and_the_reason_says_why(
    configure: Any, approve: Approve
) -> None:
    inv = factories.investigation(grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.8)
    with respx.mock(base_url=API, assert_all_called=False), pytest.raises(ApprovalError) as refused:
        approve("patch", inv)  # any request would fail the test
    assert refused.value.code == ApprovalError.NOT_BUILDABLE
    assert refused.value.message.startswith("a patch cannot be built: the conclusion cites no change")


def test_a_deploy_with_no_manifest_configured_cannot_be_approved_as_a_patch(
    configure: Any, approve: Approve
) -> None:
    configure(manifest_path=None)
    with respx.mock(base_url=API, assert_all_called=False), pytest.raises(ApprovalError) as refused:
        approve("patch")
    assert refused.value.code == ApprovalError.NOT_BUILDABLE
    assert "ROOTLINE_ACTIONS_MANIFEST_PATH" in refused.value.message


def test_a_pull_request_citation_gets_the_revert_of_its_merge_commit(
    configure: Any, approve: Approve
) -> None:
    inv = factories.investigation()
    inv.evidence_chain = {
        **inv.evidence_chain,
        "citation": {**inv.evidence_chain["citation"], "kind": "pr", "ref": "#88"},
    }
    inv.save(update_fields=["evidence_chain"])
    proposal = approve("patch", inv)
    merged = {
        **recorded.pull(88, "fix-pool", "Shrink the pool", "b"),
        "merged_at": "2023-09-22T15:40:02Z",
        "merge_commit_sha": recorded.ROLLOUT_SHA,
    }
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        gh.get(f"/repos/{REPO}/pulls/88").mock(return_value=httpx.Response(200, json=merged))
        gh.get(f"/repos/{REPO}/commits/{recorded.ROLLOUT_SHA}").mock(
            return_value=httpx.Response(200, json=recorded.rollout_commit())
        )
        run(proposal)
    assert "-  replicas: 4\n+  replicas: 5\n" in proposal.patch
    assert (
        proposal.execution["patch_note"]
        == f"Reverts {recorded.ROLLOUT_SHA[:12]}, the merge of pull request #88."
    )


def test_a_manifest_nothing_changed_before_the_deploy_gets_no_patch(configure: Any, approve: Approve) -> None:
    proposal = approve("patch")
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        gh.get(f"/repos/{REPO}/commits").mock(return_value=httpx.Response(200, json=[]))
        run(proposal)
    assert (proposal.status, proposal.patch) == ("failed", "")  # never done without a patch
    assert proposal.error == (
        f"no commit changed {MANIFEST} at or before the deploy v2-fd6989b7c (2023-09-22T15:57:41Z)"
    )


def test_a_commit_github_does_not_know_fails_with_the_reason(configure: Any, approve: Approve) -> None:
    proposal = approve("patch", factories.investigation())
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        gh.get(f"/repos/{REPO}/commits/abc123").mock(return_value=recorded.error(404, "Not Found"))
        run(proposal)
    assert proposal.status == "failed"
    assert "HTTP 404" in proposal.error


# --- pull request -------------------------------------------------------------------------------------


def _pull_request_routes(gh: respx.MockRouter, proposal: ActionProposal) -> dict[str, respx.Route]:
    branch = f"rootline/action-{proposal.pk}"
    rollout = recorded.rollout_commit()
    routes = {
        "find": gh.get(f"/repos/{REPO}/pulls").mock(return_value=httpx.Response(200, json=[])),
        "history": gh.get(f"/repos/{REPO}/commits").mock(return_value=httpx.Response(200, json=[rollout])),
        "commit": gh.get(f"/repos/{REPO}/commits/{recorded.ROLLOUT_SHA}").mock(
            return_value=httpx.Response(200, json=rollout)
        ),
        "repo": gh.get(f"/repos/{REPO}").mock(return_value=httpx.Response(200, json=recorded.repository())),
        "base": gh.get(f"/repos/{REPO}/git/ref/heads/main").mock(
            return_value=httpx.Response(200, json=recorded.ref("main", recorded.BASE_SHA))
        ),
        "branch": gh.get(f"/repos/{REPO}/git/ref/heads/{branch}").mock(
            return_value=recorded.error(404, "Not Found")
        ),
        "file": gh.get(f"/repos/{REPO}/contents/{MANIFEST}").mock(
            return_value=httpx.Response(200, json=recorded.contents(MANIFEST, recorded.MANIFEST_V2))
        ),
        "create_ref": gh.post(f"/repos/{REPO}/git/refs").mock(
            return_value=httpx.Response(201, json=recorded.ref(branch, recorded.BASE_SHA))
        ),
        "put": gh.put(f"/repos/{REPO}/contents/{MANIFEST}").mock(
            return_value=httpx.Response(201, json=recorded.file_committed(MANIFEST))
        ),
        "create_pull": gh.post(f"/repos/{REPO}/pulls").mock(
            return_value=httpx.Response(201, json=recorded.pull(7, branch, proposal.title, "b"))
        ),
        "labels": gh.post(f"/repos/{REPO}/issues/7/labels").mock(
            return_value=httpx.Response(200, json=[recorded.label()])
        ),
    }
    return routes


def test_an_approved_pull_request_is_a_branch_a_revert_commit_and_a_labelled_pr(
    configure: Any, approve: Approve
) -> None:
    proposal = approve("pull_request")
    branch = f"rootline/action-{proposal.pk}"
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        routes = _pull_request_routes(gh, proposal)
        assert run(proposal)["status"] == "done"
        assert run(proposal)["status"] == "done"  # redelivered: nothing more is sent
    assert {name: r.call_count for name, r in routes.items()} == dict.fromkeys(routes, 1)
    assert dict(routes["find"].calls[0].request.url.params)["head"] == f"shop:{branch}"
    assert body_of(routes["create_ref"]) == {"ref": f"refs/heads/{branch}", "sha": recorded.BASE_SHA}
    put = body_of(routes["put"])
    assert base64.b64decode(put["content"]).decode() == recorded.MANIFEST_V1  # the rollout undone
    assert put["branch"] == branch
    assert put["sha"] == recorded.contents(MANIFEST, "")["sha"]
    assert put["message"].startswith('Revert "adservice: roll out v2-fd6989b7c"')
    pr = body_of(routes["create_pull"])
    assert (pr["head"], pr["base"], pr["title"]) == (branch, "main", proposal.title)
    assert pr["body"].endswith(f"<!-- rootline:action:{proposal.pk} -->")
    assert "Rolls back the deploy v2-fd6989b7c" in pr["body"]
    assert body_of(routes["labels"]) == {"labels": ["rootline"]}
    assert proposal.artifact_url == f"{recorded.HTML}/pull/7"
    assert "-  replicas: 4\n+  replicas: 5\n" in proposal.patch
    assert all(call.request.method != "PUT" or "/merge" not in call.request.url.path for call in gh.calls)


def test_a_redelivered_pull_request_task_finds_its_pr_by_branch(configure: Any, approve: Approve) -> None:
    proposal = approve("pull_request")
    ActionProposal.objects.filter(pk=proposal.pk).update(status="executing")  # died after opening it
    branch = f"rootline/action-{proposal.pk}"
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        routes = _pull_request_routes(gh, proposal)
        routes["find"].mock(return_value=httpx.Response(200, json=[recorded.pull(7, branch, "t", "b")]))
        run(proposal)
    assert (
        routes["create_ref"].call_count == routes["put"].call_count == routes["create_pull"].call_count == 0
    )
    assert routes["labels"].call_count == 1
    assert proposal.artifact_url == f"{recorded.HTML}/pull/7"


def test_a_pull_request_validation_error_fails_the_action(configure: Any, approve: Approve) -> None:
    proposal = approve("pull_request")
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        routes = _pull_request_routes(gh, proposal)
        routes["create_pull"].mock(return_value=recorded.error(422, "Validation Failed"))
        run(proposal)
    assert proposal.status == "failed"
    assert "HTTP 422" in proposal.error
    assert routes["labels"].call_count == 0


def test_in_dry_run_the_reads_build_the_pr_and_every_write_is_shown_not_sent(
    configure: Any, approve: Approve
) -> None:
    configure(dry_run=True)
    proposal = approve("pull_request")
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        routes = _pull_request_routes(gh, proposal)
        run(proposal)
    writes = ("create_ref", "put", "create_pull", "labels")
    assert all(routes[w].call_count == 0 for w in writes)
    assert proposal.status == "done"
    assert proposal.execution["dry_run"] is True
    assert proposal.artifact_url == ""
    held = [r for r in proposal.execution["requests"] if not r["sent"]]
    assert [(r["method"], r["url"].removeprefix(API)) for r in held] == [
        ("POST", f"/repos/{REPO}/git/refs"),
        ("PUT", f"/repos/{REPO}/contents/{MANIFEST}"),
        ("POST", f"/repos/{REPO}/pulls"),
        ("POST", f"/repos/{REPO}/issues/{{number}}/labels"),
    ]
    assert base64.b64decode(held[1]["payload"]["content"]).decode() == recorded.MANIFEST_V1
    assert proposal.execution["body"] == held[2]["payload"]["body"]
    # the API shows what the page shows
    api = APIClient()
    api.force_authenticate(factories.user("viewer"))
    shown = api.get(f"/api/v1/actions/{proposal.pk}/").json()
    assert (shown["status"], shown["artifact_url"], shown["patch"]) == ("done", "", proposal.patch)
    assert shown["execution"]["requests"] == proposal.execution["requests"]


def test_a_pull_request_reverting_a_commit_that_added_a_file_deletes_it(
    configure: Any, approve: Approve
) -> None:
    proposal = approve("pull_request", factories.investigation())  # grounded, citing commit abc123
    branch = f"rootline/action-{proposal.pk}"
    sha = "abc123" + "0" * 34
    flag = "feature:\n  fast_path: true\n"
    fetched = recorded.commit(
        sha, "Turn on the fast path", [recorded.commit_file("flags.yaml", "", flag, "added")]
    )
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        routes = _pull_request_routes(gh, proposal)
        gh.get(f"/repos/{REPO}/commits/abc123").mock(return_value=httpx.Response(200, json=fetched))
        gh.get(f"/repos/{REPO}/contents/flags.yaml").mock(
            return_value=httpx.Response(200, json=recorded.contents("flags.yaml", flag))
        )
        deleted = gh.delete(f"/repos/{REPO}/contents/flags.yaml").mock(
            return_value=httpx.Response(
                200, json={"content": None, "commit": recorded.file_committed("x")["commit"]}
            )
        )
        run(proposal)
    assert proposal.status == "done", proposal.error
    assert body_of(deleted) == {
        "message": f'Revert "Turn on the fast path"\n\nThis reverts commit {sha}.',
        "sha": recorded.contents("flags.yaml", "")["sha"],
        "branch": branch,
    }
    assert routes["put"].call_count == 0
    assert proposal.patch.startswith(
        "diff --git a/flags.yaml b/flags.yaml\n--- a/flags.yaml\n+++ /dev/null\n"
    )
