"""What approving an action would do, worked out before anyone approves it.

`preview` runs the tier's executor against a dry-run journal: reads are made (they build the artifact
and change nothing), writes are only recorded. So the action page shows exactly what would be sent
(the would-be diff, branch, title and body, and every request), and says what is missing when the
action cannot be built. `rca.incidents.approvals` refuses to approve a tier whose preview cannot be
built, so an approved patch or pull request never fails for want of a repository and a patch never
ends "done" without a patch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from django.conf import settings

from rca.actions.errors import ActionError
from rca.config import ActionsConfig
from rca.core.actions import ActionTier
from rca.incidents.models import ActionProposal
from rca.integrations.email.config import RECIPIENTS_ENV
from rca.integrations.github.config import REPOSITORY_ENV, TOKEN_ENV
from rca.integrations.github.repository import RepositoryError
from rca.integrations.http import HTTPFailure, IntegrationError
from rca.integrations.journal import Journal, ReadsWithheld
from rca.integrations.slack.config import WEBHOOK_ENV

# A page view waits at most this long for each read from GitHub (one attempt, no retries): the same
# deadline as a health check's (ROOTLINE_HEALTH_TIMEOUT_S default), so a slow GitHub cannot hang the page.
PREVIEW_BUDGET_S = 2.0
MANIFEST_ENV = "ROOTLINE_ACTIONS_MANIFEST_PATH"
# The tiers that write to a repository, and so need one configured to be sent for real.
_REPOSITORY_TIERS = (ActionTier.ISSUE, ActionTier.PATCH, ActionTier.PULL_REQUEST)


@dataclass(frozen=True)
class Preview:
    """One tier's would-be execution: whether it can be built, why not, and what it would send."""

    tier: ActionTier
    dry_run: bool
    buildable: bool
    reason: str = ""  # why it cannot be built ("" when it can)
    missing: tuple[str, ...] = ()  # settings that are unset, each with what it is for
    kind: str = ""
    patch: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    unavailable: str = ""  # why the repository could not be read just now (the preview is partial)


def missing_settings(tier: ActionTier, config: ActionsConfig) -> tuple[str, ...]:
    """The unset settings the tier needs, each a short sentence naming its variable."""
    missing: list[str] = []
    if tier in _REPOSITORY_TIERS and (config.github is None or not config.github.repo):
        missing.append(f"{REPOSITORY_ENV} and {TOKEN_ENV}: no GitHub repository to read from or write to")
    elif tier in _REPOSITORY_TIERS and config.github is not None and not config.github.token:
        missing.append(f"{TOKEN_ENV}: GitHub would refuse the writes without a token")
    if tier in (ActionTier.PATCH, ActionTier.PULL_REQUEST) and config.manifest_path is None:
        missing.append(
            f"{MANIFEST_ENV}: no manifest to roll a deploy back in, or to propose a configuration "
            "change against"
        )
    if tier is ActionTier.NOTIFY and not config.channels:
        missing.append(
            f"{WEBHOOK_ENV} or {RECIPIENTS_ENV}: no notification channel, so it is recorded in Rootline only"
        )
    return tuple(missing)


def preview(proposal: ActionProposal, tier: ActionTier | None = None) -> Preview:
    """What executing `proposal` at `tier` (default: its own) would send, built in dry run (reads
    from the repository are made: the diff is built from what it holds)."""
    journal = Journal(dry_run=True, budget_s=PREVIEW_BUDGET_S)
    return _run(proposal, ActionTier(tier or proposal.tier), journal)


def why_not_buildable(proposal: ActionProposal, tier: ActionTier) -> str | None:
    """Why `proposal` cannot be built at `tier` before anything is read from outside (no repository,
    no citation nor remedy, no manifest configured), or None. Sends nothing: the approval check."""
    found = _run(proposal, tier, Journal(dry_run=True, reads=False))
    return None if found.buildable else found.reason


def _known(proposal: ActionProposal, tier: ActionTier, config: ActionsConfig) -> dict[str, Any]:
    """What an issue or pull request would carry even when its change cannot be built yet."""
    from rca.actions.executors import artifact_body, branch_for

    if tier is ActionTier.ISSUE:
        return {"title": proposal.title, "body": artifact_body(proposal, config)}
    if tier is ActionTier.PULL_REQUEST:
        return {
            "branch": branch_for(proposal),
            "title": proposal.title,
            "body": artifact_body(proposal, config),
        }
    return {}


def _definitive(exc: Exception) -> bool:
    """Whether a failure rules the action out (no patch, nothing configured, a 404), rather than
    saying GitHub could not be asked just now (unreachable, 5xx, rate-limited)."""
    if isinstance(exc, HTTPFailure):
        return not exc.transient
    return isinstance(exc, ActionError | RepositoryError)


def _run(proposal: ActionProposal, chosen: ActionTier, journal: Journal) -> Preview:
    from rca.actions.executors import EXECUTORS

    config: ActionsConfig = settings.ROOTLINE_ACTIONS
    missing = missing_settings(chosen, config)
    # Sent for real, a repository tier without a repository fails; in dry run it is shown as it would go.
    reason = ""
    if not config.dry_run and chosen in _REPOSITORY_TIERS:
        github = config.github
        unset = REPOSITORY_ENV if github is None or not github.repo else "" if github.token else TOKEN_ENV
        reason = f"nothing can be sent without {unset}" if unset else ""
    built = partial(Preview, chosen, config.dry_run, not reason, reason, missing, requests=journal.entries)
    try:
        artifact = EXECUTORS[chosen](proposal, replace(config, dry_run=True), journal)
    except ReadsWithheld:
        # It got as far as asking the repository: what it holds decides, at execution.
        return built()
    except (ActionError, IntegrationError) as exc:
        known = _known(proposal, chosen, config)
        if _definitive(exc):
            return replace(built(details=known), buildable=False, reason=str(exc))
        # GitHub did not answer now: that decides nothing (the execution retries), so it is shown only.
        return built(details=known, unavailable=str(exc))
    return built(kind=artifact.kind, patch=artifact.patch, details=artifact.details)
