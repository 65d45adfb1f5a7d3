"""A conclusion citing no change: the configuration change its fault kind calls for, against recorded
GitHub REST exchanges (`GET /repos/{owner}/{repo}` and `GET /repos/{owner}/{repo}/contents/{path}`).

The executors run as in production; respx replaces only the network and fails the test on any
request no route expects (a write from the patch tier, say).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx

from celery_app.tasks import execute_action
from rca.core.grounding import Grounding
from rca.incidents.approvals import ApprovalError
from rca.incidents.models import ActionProposal, Investigation
from tests.integration.actions import recorded
from tests.integration.actions.recorded import API, MANIFEST, MANIFEST_BLOB, MANIFEST_LIMITS, REPO
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

Approve = Callable[..., ActionProposal]
CONTENTS = f"/repos/{REPO}/contents/{MANIFEST}"


def run(proposal: ActionProposal) -> dict[str, Any]:
    """Run the execution task's body in this process, as a worker would."""
    result = execute_action.apply(args=[proposal.pk]).get()
    proposal.refresh_from_db()
    return dict(result)


def uncited(kind: str, root: str = "adservice") -> Investigation:
    """A confident conclusion naming `kind` of `root`, with hard evidence but no change cited: the
    evidence allows a patch, and there is nothing to revert."""
    return factories.investigation(
        grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.8, root=root, fault_kind=kind
    )


def manifest_routes(gh: respx.MockRouter, answer: httpx.Response | None = None) -> dict[str, respx.Route]:
    """The repository (for its default branch) and the manifest on it."""
    found = httpx.Response(200, json=recorded.contents(MANIFEST, MANIFEST_LIMITS, MANIFEST_BLOB))
    return {
        "repo": gh.get(f"/repos/{REPO}").mock(return_value=httpx.Response(200, json=recorded.repository())),
        "file": gh.get(CONTENTS).mock(return_value=answer or found),
    }


# --- the patch tier -----------------------------------------------------------------------------------


def test_a_cpu_conclusion_citing_no_change_gets_its_cpu_limit_raised_in_the_manifest(
    configure: Any, approve: Approve
) -> None:
    proposal = approve("patch", uncited("cpu"))
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        routes = manifest_routes(gh)
        assert run(proposal)["status"] == "done"
    assert dict(routes["file"].calls[0].request.url.params) == {"ref": "main"}
    assert proposal.patch == (
        f"diff --git a/{MANIFEST} b/{MANIFEST}\n--- a/{MANIFEST}\n+++ b/{MANIFEST}\n"
        "@@ -39,5 +39,5 @@\n"
        "               cpu: 200m\n"
        "               memory: 180Mi\n"
        "             limits:\n"
        "-              cpu: 300m # raised after INC-2291\n"
        "+              cpu: 600m # raised after INC-2291\n"
        '               memory: "300Mi"\n'
    )
    assert proposal.execution["patch_note"] == (
        f"Proposed configuration change to {MANIFEST} (on main): raises the CPU limit of container "
        "server of Deployment adservice from 300m to 600m (x2). Why: the conclusion names a cpu fault "
        "of adservice and cites no change to revert; more CPU relieves the saturation and throttling "
        "while the cause of the demand is found. This is a mitigation to review, not a fix of the root "
        "cause."
    )
    assert (proposal.execution["manifest"], proposal.execution["base"], proposal.execution["blob"]) == (
        MANIFEST,
        "main",
        MANIFEST_BLOB,
    )
    # reads only: a patch is attached to the action, never pushed
    assert [(r["method"], r["sent"]) for r in proposal.execution["requests"]] == [("GET", True)] * 2
    assert proposal.artifact_url == ""


@pytest.mark.parametrize(
    ("kind", "removed", "added", "said"),
    [
        ("memory", '              memory: "300Mi"', '              memory: "600Mi"', "memory limit"),
        ("latency", "  replicas: 3 # matches the HPA floor", "  replicas: 4 # matches the HPA floor", "(+1)"),
        ("errors", "  replicas: 3 # matches the HPA floor", "  replicas: 4 # matches the HPA floor", "(+1)"),
        (
            "pod_failure",
            "  replicas: 3 # matches the HPA floor",
            "  replicas: 4 # matches the HPA floor",
            "+1",
        ),
    ],
)
def test_each_fault_kind_changes_its_one_value_and_nothing_else(
    configure: Any, approve: Approve, kind: str, removed: str, added: str, said: str
) -> None:
    proposal = approve("patch", uncited(kind))
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        manifest_routes(gh)
        run(proposal)
    changed = [line for line in proposal.patch.splitlines()[3:] if line[:1] in "+-"]
    assert changed == [f"-{removed}", f"+{added}"]
    assert said in proposal.execution["patch_note"]
    assert f"names a {kind} fault of adservice" in proposal.execution["patch_note"]
    assert "a mitigation to review, not a fix of the root cause" in proposal.execution["patch_note"]


def test_a_cited_change_is_still_reverted_not_mitigated(configure: Any, approve: Approve) -> None:
    inv = factories.investigation(root="adservice", fault_kind="cpu")  # grounded, citing commit abc123
    proposal = approve("patch", inv)
    fetched = recorded.commit(
        "abc123" + "0" * 34, "Shrink the pool", [recorded.commit_file("db.yaml", "pool: 20\n", "pool: 2\n")]
    )
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        gh.get(f"/repos/{REPO}/commits/abc123").mock(return_value=httpx.Response(200, json=fetched))
        routes = manifest_routes(gh)
        run(proposal)
    assert routes["file"].call_count == 0
    assert "-pool: 2\n+pool: 20\n" in proposal.patch
    assert proposal.execution["commit"] == "abc123" + "0" * 34


# --- no patch, with the reason ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "settings_change", "reason"),
    [
        (
            "cpu",
            {"manifest_path": None},
            "no manifest is configured to propose a configuration change for adservice in (set "
            "ROOTLINE_ACTIONS_MANIFEST_PATH, e.g. kubernetes-manifests/{service}.yaml)",
        ),
        (
            "cpu",
            {"github": None},
            "no GitHub repository is configured (GITHUB_REPOSITORY) to read the manifest of adservice from",
        ),
        (
            "bad_deploy",
            {},
            "a bad_deploy fault has no configuration change to propose offline: a bad deploy or "
            "configuration change is undone by reverting it, so there is nothing to propose without the "
            "change itself",
        ),
        (
            "cpu_saturation",
            {},
            "a cpu_saturation fault has no configuration change to propose offline: Rootline knows no "
            "configuration remedy for it",
        ),
        (
            "cpu",
            {"manifest_path": "deploy/{service}/{env}.yaml"},
            "ROOTLINE_ACTIONS_MANIFEST_PATH='deploy/{service}/{env}.yaml' is not a path with {service} in it",
        ),
    ],
)
def test_without_what_a_configuration_change_needs_the_patch_cannot_be_approved_and_nothing_is_read(
    configure: Any, approve: Approve, kind: str, settings_change: dict[str, Any], reason: str
) -> None:
    configure(**settings_change)
    with respx.mock(base_url=API, assert_all_called=False), pytest.raises(ApprovalError) as refused:
        approve("patch", uncited(kind))  # any request would fail the test
    assert refused.value.code == ApprovalError.NOT_BUILDABLE
    assert refused.value.message == (
        f"a patch cannot be built: the conclusion cites no change to revert, and {reason}"
    )
    assert ActionProposal.objects.get().status == "proposed"


def test_a_manifest_missing_from_the_repository_gets_no_patch(configure: Any, approve: Approve) -> None:
    proposal = approve("patch", uncited("cpu"))
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        routes = manifest_routes(gh, recorded.error(404, "Not Found"))
        run(proposal)
    assert routes["file"].call_count == 1  # a 404 is an answer, not retried
    assert proposal.status == "failed"  # never done without a patch
    assert proposal.patch == ""
    assert proposal.error == (
        f"the conclusion cites no change to revert, and {MANIFEST} is not in {REPO} on main"
    )
    assert [r["status"] for r in proposal.execution["requests"]] == [200, 404]


@pytest.mark.parametrize(
    ("kind", "manifest", "reason"),
    [
        (
            "cpu",
            recorded.MANIFEST_V1,  # requests only, no limits
            "the container server of Deployment adservice sets no CPU limit, so there is no limit to raise",
        ),
        (
            "memory",
            recorded.MANIFEST_V1,
            "the container server of Deployment adservice sets no memory limit, so there is no limit to "
            "raise",
        ),
        (
            "latency",
            MANIFEST_LIMITS.replace("  replicas: 3 # matches the HPA floor\n", ""),
            "Deployment adservice sets no replicas (the default of 1 applies, or an autoscaler manages "
            "them), so there is no count to raise",
        ),
        (
            "cpu",
            MANIFEST_LIMITS.replace("name: adservice", "name: cartservice"),
            "it holds no Deployment or StatefulSet named adservice nor one with a container named "
            "adservice (it holds Service cartservice, Deployment cartservice)",
        ),
    ],
)
def test_a_manifest_without_the_value_to_change_gets_no_patch_saying_what_is_missing(
    configure: Any, approve: Approve, kind: str, manifest: str, reason: str
) -> None:
    proposal = approve("patch", uncited(kind))
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        manifest_routes(gh, httpx.Response(200, json=recorded.contents(MANIFEST, manifest)))
        run(proposal)
    assert (proposal.status, proposal.patch) == ("failed", "")
    assert proposal.error == (
        f"the conclusion cites no change to revert, and {MANIFEST} on main offers no change: {reason}"
    )


def test_a_manifest_github_refuses_to_show_fails_the_action_with_the_reason(
    configure: Any, approve: Approve
) -> None:
    proposal = approve("patch", uncited("cpu"))
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        manifest_routes(gh, recorded.error(403, "Resource not accessible by integration"))
        run(proposal)
    assert proposal.status == "failed"  # not "no patch": the change may well exist
    assert "HTTP 403" in proposal.error
    assert "Resource not accessible by integration" in proposal.error


# --- the pull-request tier ----------------------------------------------------------------------------


def test_a_pull_request_commits_the_configuration_change_on_its_branch(
    configure: Any, approve: Approve
) -> None:
    # A grounded row whose chain holds no citation (edited by hand, say): the pull request carries the
    # same proposal as the patch tier would, committed computed from the default branch.
    inv = factories.investigation(root="adservice", fault_kind="cpu")
    inv.evidence_chain = {**inv.evidence_chain, "citation": None}
    inv.save(update_fields=["evidence_chain"])
    proposal = approve("pull_request", inv)
    branch = f"rootline/action-{proposal.pk}"
    with respx.mock(base_url=API, assert_all_called=False) as gh:
        routes = manifest_routes(gh)
        gh.get(f"/repos/{REPO}/pulls").mock(return_value=httpx.Response(200, json=[]))
        gh.get(f"/repos/{REPO}/git/ref/heads/main").mock(
            return_value=httpx.Response(200, json=recorded.ref("main", recorded.BASE_SHA))
        )
        gh.get(f"/repos/{REPO}/git/ref/heads/{branch}").mock(return_value=recorded.error(404, "Not Found"))
        gh.post(f"/repos/{REPO}/git/refs").mock(
            return_value=httpx.Response(201, json=recorded.ref(branch, recorded.BASE_SHA))
        )
        put = gh.put(CONTENTS).mock(return_value=httpx.Response(201, json=recorded.file_committed(MANIFEST)))
        created = gh.post(f"/repos/{REPO}/pulls").mock(
            return_value=httpx.Response(201, json=recorded.pull(9, branch, proposal.title, "b"))
        )
        gh.post(f"/repos/{REPO}/issues/9/labels").mock(
            return_value=httpx.Response(200, json=[recorded.label()])
        )
        assert run(proposal)["status"] == "done", proposal.error
    sent = json.loads(put.calls[0].request.content)
    edited = MANIFEST_LIMITS.replace("cpu: 300m # raised", "cpu: 600m # raised")
    assert base64.b64decode(sent["content"]).decode() == edited
    assert (sent["branch"], sent["sha"]) == (branch, MANIFEST_BLOB)
    assert sent["message"].startswith(
        "adservice: raise the CPU limit to 600m (mitigation proposed by Rootline)\n\n"
    )
    assert "not a fix of the root cause" in json.loads(created.calls[0].request.content)["body"]
    assert routes["file"].call_count == 2  # the proposal, then the commit computed from main's copy
    assert "+              cpu: 600m # raised after INC-2291\n" in proposal.patch
    assert proposal.artifact_url == f"{recorded.HTML}/pull/9"


def test_an_entity_that_is_no_kubernetes_name_leads_to_no_path(configure: Any, approve: Approve) -> None:
    with respx.mock(base_url=API, assert_all_called=False), pytest.raises(ApprovalError) as refused:
        approve("patch", uncited("cpu", root="../secrets"))  # any request would fail the test
    assert refused.value.message == (
        "a patch cannot be built: the conclusion cites no change to revert, and '../secrets' is not a "
        "Kubernetes object name, so it names no manifest or workload"
    )
