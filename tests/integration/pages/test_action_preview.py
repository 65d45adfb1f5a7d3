"""Dry-run approvals on the action page: before anyone approves, the page says what is missing and what
would be sent, and a tier that cannot be built is disabled with the reason (rca.actions.preview); the
server refuses it too. GitHub is replaced by recorded REST exchanges (respx), nothing else."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx
import pytest
import respx
from django.test import Client

from celery_app.tasks import execute_action
from rca.actions.preview import why_not_buildable
from rca.core.actions import ActionTier
from rca.core.grounding import Grounding
from rca.incidents.models import ActionProposal
from rca.integrations.github.config import GitHubConfig
from tests.integration.actions import recorded
from tests.integration.actions.recorded import API, REPO
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

COMMIT = "abc123" + "0" * 34
CITATION = {"kind": "commit", "ref": "abc123", "entity": "payments-db", "at": 0.0, "title": "pool"}


@pytest.fixture
def dry_run(settings: Any) -> Any:
    """Dry run, and no repository, no channel: a fresh installation."""
    settings.ROOTLINE_ACTIONS = replace(settings.ROOTLINE_ACTIONS, dry_run=True, github=None, channels=())
    return settings


def test_without_a_repository_a_pull_request_says_what_is_missing_and_cannot_be_approved(
    dry_run: Any, approver: Client
) -> None:
    proposal = factories.proposal(factories.investigation())  # grounded, citing commit abc123
    assert proposal.tier == "pull_request"
    page = approver.get(f"/actions/{proposal.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="preview-unbuildable"' in html
    assert "GITHUB_REPOSITORY and GITHUB_TOKEN: no GitHub repository" in html
    # What would be sent, though it cannot be built yet: the branch, the title and the body.
    assert f'<code id="preview-branch">rootline/action-{proposal.pk}</code>' in html
    assert f"Action: http://127.0.0.1:8000/actions/{proposal.pk}/" in html
    tiers = {t["value"]: t for t in page.context["tiers"]}
    assert not tiers["pull_request"]["allowed"]
    assert tiers["pull_request"]["why_not"].startswith("cannot be built: no GitHub repository is configured")
    assert tiers["issue"]["allowed"]
    assert tiers["issue"]["default"]
    assert "Approving as pull request is disabled: it cannot be built" in html
    refused = approver.post(
        f"/actions/{proposal.pk}/", {"decision": "approve", "reason": "ship it", "tier": "pull_request"}
    )
    assert refused.status_code == 409
    assert "a pull request cannot be built: no GitHub repository is configured" in refused.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == "proposed"


def test_an_issue_in_dry_run_is_approved_and_done_with_the_request_it_would_send(
    dry_run: Any, approver: Client
) -> None:
    proposal = factories.proposal(factories.investigation())
    html = approver.get(f"/actions/{proposal.pk}/").content.decode()
    assert 'id="preview-dry-run"' in html
    approved = approver.post(
        f"/actions/{proposal.pk}/", {"decision": "approve", "reason": "an issue first", "tier": "issue"}
    )
    assert approved.status_code == 302
    execute_action.apply(args=[proposal.pk]).get()
    proposal.refresh_from_db()
    assert proposal.status == "done"
    assert proposal.execution["dry_run"] is True
    posted = [r for r in proposal.execution["requests"] if r["method"] == "POST"]
    assert [(r["url"], r["sent"]) for r in posted] == [
        ("https://api.github.com/repos/{GITHUB_REPOSITORY}/issues", False)
    ]
    trail = approver.get(f"/actions/{proposal.pk}/").content.decode().split('id="audit-trail"')[1]
    assert '<span class="k">dry run</span> yes' in trail  # words, not True / False
    assert "True" not in trail
    assert "False" not in trail


def _cited_patch(settings: Any) -> ActionProposal:
    """A patch proposal citing commit abc123, with the repository configured (dry run)."""
    settings.ROOTLINE_ACTIONS = replace(
        settings.ROOTLINE_ACTIONS, dry_run=True, github=GitHubConfig(repo=REPO, token="t")
    )
    inv = factories.investigation(grounding=Grounding.PARTIALLY_GROUNDED, raw_confidence=0.8)
    inv.evidence_chain = {**inv.evidence_chain, "citation": CITATION}
    inv.save(update_fields=["evidence_chain"])
    return factories.proposal(inv)


def test_with_a_repository_the_page_shows_the_would_be_diff_before_approval(
    settings: Any, approver: Client
) -> None:
    proposal = _cited_patch(settings)
    assert proposal.tier == "patch"
    fetched = recorded.commit(
        COMMIT, "Shrink the pool", [recorded.commit_file("db.yaml", "pool: 20\n", "pool: 2\n")]
    )
    with respx.mock(base_url=API, assert_all_called=True) as gh:  # a write would fail the test
        gh.get(f"/repos/{REPO}/commits/abc123").mock(return_value=httpx.Response(200, json=fetched))
        page = approver.get(f"/actions/{proposal.pk}/")
    html = page.content.decode()
    assert 'id="preview-buildable"' in html
    assert '<span class="del">-pool: 2</span>' in html
    assert '<span class="add">+pool: 20</span>' in html
    assert page.context["preview"].patch.startswith("diff --git a/db.yaml b/db.yaml")


def test_a_patch_the_repository_rules_out_is_disabled_on_the_page(settings: Any, approver: Client) -> None:
    proposal = _cited_patch(settings)
    with respx.mock(base_url=API) as gh:
        gh.get(f"/repos/{REPO}/commits/abc123").mock(return_value=recorded.error(404, "Not Found"))
        page = approver.get(f"/actions/{proposal.pk}/")
    tiers = {t["value"]: t for t in page.context["tiers"]}
    assert not tiers["patch"]["allowed"]
    assert tiers["patch"]["why_not"].startswith("cannot be built:")
    assert tiers["issue"]["default"]
    assert ActionProposal.objects.get(pk=proposal.pk).status == "proposed"


def test_sent_for_real_a_repository_tier_needs_a_repository_and_a_token(settings: Any) -> None:
    proposal = factories.proposal(
        factories.investigation(grounding=Grounding.UNGROUNDED, raw_confidence=0.99)
    )
    assert proposal.tier == "issue"
    settings.ROOTLINE_ACTIONS = replace(settings.ROOTLINE_ACTIONS, dry_run=False, github=None)
    assert why_not_buildable(proposal, ActionTier.ISSUE) == "nothing can be sent without GITHUB_REPOSITORY"
    assert why_not_buildable(proposal, ActionTier.NOTIFY) is None
    settings.ROOTLINE_ACTIONS = replace(settings.ROOTLINE_ACTIONS, github=GitHubConfig(repo=REPO))
    assert why_not_buildable(proposal, ActionTier.ISSUE) == "nothing can be sent without GITHUB_TOKEN"
    settings.ROOTLINE_ACTIONS = replace(
        settings.ROOTLINE_ACTIONS, github=GitHubConfig(repo=REPO, token="t"), manifest_path=None
    )
    assert why_not_buildable(proposal, ActionTier.ISSUE) is None  # the issue's reads are withheld
