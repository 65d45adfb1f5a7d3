"""Fixtures for the executor tests: the actions settings, fast retries, and approved actions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from rca.config import ActionsConfig
from rca.core.actions import ActionTier
from rca.core.grounding import Grounding
from rca.incidents import approvals
from rca.incidents.models import ActionProposal, Investigation
from rca.integrations.github.config import GitHubConfig
from rca.integrations.http import RetryPolicy
from tests.integration.actions import recorded
from tests.integration.api import factories

TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"


@pytest.fixture
def configure(settings: Any) -> Callable[..., ActionsConfig]:
    """Set ROOTLINE_ACTIONS for the test: GitHub configured, not in dry run, unless told otherwise."""

    def apply(**changes: Any) -> ActionsConfig:
        base = ActionsConfig(
            dry_run=False,
            base_url="http://rootline.test",
            github=GitHubConfig(repo=recorded.REPO, token=TOKEN),
            manifest_path="kubernetes-manifests/{service}.yaml",
        )
        settings.ROOTLINE_ACTIONS = replace(base, **changes)
        return settings.ROOTLINE_ACTIONS

    apply()
    return apply


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same retry logic, without the waits (3 attempts)."""
    monkeypatch.setattr(
        "rca.integrations.http.WRITE_RETRY",
        RetryPolicy(max_attempts=3, base_delay=0.0, max_delay=0.0, max_total=30),
    )


def deploy_investigation(**fields: Any) -> Investigation:
    """A confident, grounded investigation citing the rollout v2-fd6989b7c of adservice (a deploy)."""
    inv = factories.investigation(root="adservice", fault_kind="bad_deploy", **fields)
    chain = dict(inv.evidence_chain)
    chain["citation"] = {
        "kind": "deploy",
        "ref": "v2-fd6989b7c",
        "entity": "adservice",
        "at": 1695398261.0,
        "title": "adservice: rollout step of v2-fd6989b7c completed, 1 new / 4 old replicas",
    }
    inv.evidence_chain = chain
    inv.save(update_fields=["evidence_chain"])
    return inv


@pytest.fixture
def approve(db: None) -> Callable[..., ActionProposal]:
    """Approve a proposal at `tier` through the approval service (as the page and API do)."""
    approver = factories.user("approver")

    def make(tier: str, investigation: Investigation | None = None, **fields: Any) -> ActionProposal:
        inv = investigation or deploy_investigation()
        proposal = factories.proposal(inv, **fields)
        return approvals.approve(proposal, approver, "the evidence is clear", ActionTier(tier))

    return make


def ungrounded_investigation() -> Investigation:
    """A confident but ungrounded conclusion (no citation): the evidence allows at most an issue."""
    return factories.investigation(grounding=Grounding.UNGROUNDED, raw_confidence=0.99)


def verbs(proposal: ActionProposal) -> list[str]:
    """The proposal's audit verbs, oldest first."""
    from rca.incidents.models import AuditEvent

    return list(
        AuditEvent.objects.filter(target_type="incidents.actionproposal", target_id=str(proposal.pk))
        .order_by("at", "id")
        .values_list("verb", flat=True)
    )
