"""Carrying out an approved action: notify, open an issue, propose a patch, open a pull request.

`execute` is what the `rootline.execute_action` task calls. Before anything runs it checks, itself,
that the action is approved, that the approval on record is for the tier it is about to run, that the
tier is still within what the evidence allows (derived again from the investigation), and for a pull
request that the conclusion is grounded: a message put on the queue by hand cannot get past this.

Every step is audited (started, succeeded with the artifact's address, failed with the reason) and
the result is stored on the ActionProposal. Executing is idempotent: a finished action is never run
again, and an interrupted one finds what its first attempt made (the issue by a hidden marker in its
body, the pull request by its branch) instead of making a second one. Nothing is ever merged.
"""

from __future__ import annotations

import logging
import smtplib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rca.actions.config_change import ConfigChange, config_change_for
from rca.actions.diffs import FileDiff, PatchError
from rca.actions.errors import ActionError
from rca.actions.revert import Revert, revert_for
from rca.config import ActionsConfig
from rca.core.actions import ActionTier
from rca.incidents.models import ActionProposal, AuditEvent
from rca.incidents.results import result_document
from rca.incidents.services import record_audit
from rca.integrations import registry
from rca.integrations.github.repository import GitHubRepo
from rca.integrations.http import HTTPFailure, IntegrationError
from rca.integrations.journal import Journal

log = logging.getLogger(__name__)

ACTOR = "executor"
Status = ActionProposal.Status


class TransientActionError(Exception):
    """The action failed for a reason that may pass (429, 5xx, unreachable); the task retries it."""


@dataclass
class Artifact:
    """What an executor produced: its address (if any), the patch (if any), and details to show."""

    kind: str
    url: str = ""
    patch: str = ""
    details: dict[str, Any] = field(default_factory=dict)


# --- the entry point -----------------------------------------------------------------------------------


def execute(action_id: int, *, final_attempt: bool = True) -> dict[str, Any]:
    """Execute approved action `action_id` once; returns a JSON-able summary.

    Raises TransientActionError when a retryable failure happened and this is not the final attempt
    (the action stays executing and its page shows the failure); otherwise every failure ends as a
    failed action with the reason.
    """
    proposal, early = _claim(action_id)
    if proposal is None:
        return early
    config: ActionsConfig = settings.ROOTLINE_ACTIONS
    journal = Journal(dry_run=config.dry_run)
    tier = ActionTier(proposal.tier)
    try:
        artifact = EXECUTORS[tier](proposal, config, journal)
    except Exception as exc:
        transient = _transient(exc)
        known = isinstance(exc, ActionError | IntegrationError)
        if not known:
            log.exception("action %s failed", action_id)
        reason = f"{exc}" if known else f"{type(exc).__name__}: {exc}"
        retrying = transient and not final_attempt
        _store_failure(proposal, reason, journal, final=not retrying)
        if retrying:
            raise TransientActionError(reason) from exc
        return {"action": action_id, "status": Status.FAILED.value, "reason": reason}
    if tier is not ActionTier.NOTIFY:
        artifact.details["notification"] = _notify_as_well(proposal, config, journal, artifact.url)
    _store_success(proposal, artifact, journal)
    return {"action": action_id, "status": Status.DONE.value, "kind": artifact.kind, "url": artifact.url}


def _notify_as_well(
    proposal: ActionProposal, config: ActionsConfig, journal: Journal, artifact_url: str
) -> dict[str, Any]:
    """Every conclusion acted on is announced too, with the artifact's address. The artifact exists
    by now, so a notification that fails is recorded on the action rather than failing it."""
    try:
        return notify(proposal, config, journal, artifact_url).details
    except (ActionError, IntegrationError, smtplib.SMTPException, OSError) as exc:
        log.warning("action %s: the notification failed: %s", proposal.pk, exc)
        return {"error": str(exc)}


def _transient(exc: Exception) -> bool:
    if isinstance(exc, HTTPFailure):
        return exc.transient
    return isinstance(exc, smtplib.SMTPServerDisconnected | smtplib.SMTPConnectError | ConnectionError)


def refusal(proposal: ActionProposal) -> str | None:
    """Why `proposal` must not be executed as it stands, or None when it may."""
    from rca.incidents.approvals import allowed_tier

    if proposal.status not in (Status.APPROVED, Status.EXECUTING):
        return f"the action is {proposal.status}, not approved"
    approval = (
        AuditEvent.objects.filter(
            target_type=ActionProposal._meta.label_lower, target_id=str(proposal.pk), verb="action.approved"
        )
        .order_by("-at", "-id")
        .first()
    )
    if approval is None:
        return "no approval of this action is on record"
    if approval.detail.get("tier") != proposal.tier:
        return f"it was approved as {approval.detail.get('tier')}, not {proposal.tier}"
    # The ceiling is derived again from the investigation's exit, grounding and capped confidence: a
    # pull request only for a confident, grounded conclusion, whatever the proposal row says.
    tier = ActionTier(proposal.tier)
    ceiling = allowed_tier(proposal)
    if not ceiling.allows(tier):
        return f"{tier.value} is above what the evidence allows ({ceiling.value})"
    return None


def _claim(action_id: int) -> tuple[ActionProposal | None, dict[str, Any]]:
    """Lock the action and mark it executing, or say why there is nothing (more) to do."""
    with transaction.atomic():
        proposal = (
            ActionProposal.objects.select_for_update(of=("self",))
            .select_related("investigation__incident")
            .filter(pk=action_id)
            .first()
        )
        if proposal is None:
            return None, {"action": action_id, "status": "missing"}
        if proposal.status == Status.DONE:
            # A redelivered task: the artifact exists, nothing is made twice.
            record_audit(
                "action.execution_skipped",
                proposal,
                actor_label=ACTOR,
                detail={"reason": "already executed", "url": proposal.artifact_url},
            )
            return None, {"action": action_id, "status": Status.DONE.value, "url": proposal.artifact_url}
        why = refusal(proposal)
        if why is not None:
            if proposal.status in (Status.APPROVED, Status.EXECUTING):
                proposal.status = Status.FAILED
                proposal.error = f"refused: {why}"
                proposal.save(update_fields=["status", "error"])
            record_audit("action.execution_refused", proposal, actor_label=ACTOR, detail={"reason": why})
            return None, {"action": action_id, "status": "refused", "reason": why}
        resumed = proposal.status == Status.EXECUTING
        proposal.status = Status.EXECUTING
        proposal.save(update_fields=["status"])
        record_audit(
            "action.execution_started",
            proposal,
            actor_label=ACTOR,
            detail={
                "tier": proposal.tier,
                "dry_run": settings.ROOTLINE_ACTIONS.dry_run,
                "resumed": resumed,
            },
        )
        return proposal, {}


def _store_success(proposal: ActionProposal, artifact: Artifact, journal: Journal) -> None:
    with transaction.atomic():
        proposal.status = Status.DONE
        proposal.artifact_url = artifact.url
        proposal.patch = artifact.patch
        proposal.execution = {
            "kind": artifact.kind,
            "dry_run": journal.dry_run,
            **artifact.details,
            "requests": journal.entries,
        }
        proposal.executed_at = timezone.now()
        proposal.error = ""
        proposal.save(update_fields=["status", "artifact_url", "patch", "execution", "executed_at", "error"])
        record_audit(
            "action.execution_succeeded",
            proposal,
            actor_label=ACTOR,
            detail={
                "kind": artifact.kind,
                "url": artifact.url or ("(dry run: nothing was sent)" if journal.dry_run else ""),
                "dry_run": journal.dry_run,
            },
        )


def _store_failure(proposal: ActionProposal, reason: str, journal: Journal, *, final: bool) -> None:
    with transaction.atomic():
        proposal.error = reason
        proposal.execution = {"dry_run": journal.dry_run, "requests": journal.entries}
        fields = ["error", "execution"]
        if final:
            proposal.status = Status.FAILED
            fields.append("status")
        proposal.save(update_fields=fields)
        record_audit(
            "action.execution_failed",
            proposal,
            actor_label=ACTOR,
            detail={"reason": reason[:1000], "retrying": not final},
        )


# --- what the artifacts say ----------------------------------------------------------------------------


def marker(proposal: ActionProposal) -> str:
    """The hidden marker an issue or pull request of this action carries, to be found again by."""
    return f"<!-- rootline:action:{proposal.pk} -->"


def links(proposal: ActionProposal, config: ActionsConfig) -> str:
    """Links back to the incident and the action in Rootline."""
    incident = proposal.investigation.incident_id
    return (
        f"Incident: {config.base_url}/incidents/{incident}/\nAction: {config.base_url}/actions/{proposal.pk}/"
    )


def artifact_body(proposal: ActionProposal, config: ActionsConfig, extra: str = "") -> str:
    """The body of the issue or pull request: the conclusion's body, links, and the marker."""
    parts = [proposal.body.strip(), extra.strip(), links(proposal, config), marker(proposal)]
    return "\n\n".join(p for p in parts if p)


def notification_text(proposal: ActionProposal, config: ActionsConfig, artifact_url: str = "") -> str:
    """The outcome sentence, the evidence chain in one line, the artifact made (if any) and the link
    to the incident."""
    investigation = proposal.investigation
    chain = _chain(proposal)
    citation = chain.get("citation")
    cited = f"{citation['kind']} {citation['ref']} on {citation['entity']}" if citation else "no change cited"
    capped = investigation.capped_confidence
    summary = (
        f"Evidence chain: {_validating_count(proposal)} validating item(s); {cited}; "
        f"{(investigation.grounding or 'ungrounded').replace('_', ' ')}; capped confidence "
        f"{0.0 if capped is None else capped:.2f}."
    )
    sentence = proposal.body.strip().splitlines()[0] if proposal.body.strip() else proposal.title
    made = f"{proposal.tier.replace('_', ' ')}: {artifact_url}" if artifact_url else ""
    lines = (f"Rootline: {proposal.title}", sentence, summary, made, links(proposal, config))
    return "\n".join(line for line in lines if line)


# --- the executors -------------------------------------------------------------------------------------


def _validating_count(proposal: ActionProposal) -> int:
    """How many distinct validating evidence lines the conclusion has (each line counted once)."""
    document = result_document(proposal.investigation)
    return len(document.chain.distinct_evidence()) if document else 0


def _chain(proposal: ActionProposal) -> dict[str, Any]:
    chain = proposal.investigation.evidence_chain
    return chain if isinstance(chain, dict) else {}  # a row never concluded stores an empty list


class ProposedChange(Protocol):
    """What a patch or pull request carries: file diffs, a note saying what and why, a commit message.
    A `Revert` of the cited change and a `ConfigChange` mitigation are both one."""

    @property
    def files(self) -> tuple[FileDiff, ...]:
        """The changed files, each with its diff."""
        ...

    @property
    def note(self) -> str:
        """What the change does, for the proposal's body."""
        ...

    @property
    def diff(self) -> str:
        """The whole change as one unified diff."""
        ...

    @property
    def message(self) -> str:
        """The commit message."""
        ...


def _change(proposal: ActionProposal, repo: GitHubRepo, config: ActionsConfig) -> ProposedChange:
    """The revert of the cited change; without a citation, the configuration change the fault kind of
    the named root cause calls for in its manifest (offline, no model drafts a patch)."""
    citation = _chain(proposal).get("citation")
    if citation:
        return revert_for(citation, repo, config.manifest_path)
    investigation = proposal.investigation
    return config_change_for(
        investigation.root_cause_entity, investigation.root_cause_kind, repo, config.manifest_path
    )


def _change_details(change: ProposedChange) -> dict[str, Any]:
    """What the action page shows besides the diff: the commit reverted, or the manifest changed."""
    if isinstance(change, ConfigChange):
        return {"manifest": change.path, "base": change.branch, "blob": change.blob}
    if isinstance(change, Revert):
        return {"commit": change.commit}
    return {}


def notify(
    proposal: ActionProposal, config: ActionsConfig, journal: Journal, artifact_url: str = ""
) -> Artifact:
    """Every configured channel (a Slack incoming webhook, e-mail); with none, recorded in the app only."""
    text = notification_text(proposal, config, artifact_url)
    subject = f"[Rootline] {proposal.title}"[:200]
    channels: list[str] = []
    for channel_config in config.channels:
        channel = registry.channel(channel_config)
        channel.send(subject, text, journal)
        channels.append(channel.name)
    note = "" if channels else "No Slack webhook or e-mail address is configured: recorded in Rootline only."
    return Artifact(
        "notification", details={"channels": channels or ["rootline"], "message": text, "note": note}
    )


def open_issue(proposal: ActionProposal, config: ActionsConfig, journal: Journal) -> Artifact:
    """A GitHub issue, unless one carrying this action's marker exists already."""
    body = artifact_body(proposal, config)
    with GitHubRepo.open(config.github, journal) as repo:
        found = repo.find_issue(marker(proposal), config.label)
        if found is not None:
            return Artifact(
                "issue",
                url=str(found.get("html_url") or ""),
                details={"number": found.get("number"), "found": True},
            )
        made = repo.create_issue(proposal.title, body, [config.label])
    return Artifact(
        "issue",
        url=str(made.get("html_url") or ""),
        details={"number": made.get("number"), "title": proposal.title, "body": body},
    )


def propose_patch(proposal: ActionProposal, config: ActionsConfig, journal: Journal) -> Artifact:
    """The revert of the cited change (or, citing none, a configuration change against the manifest)
    as a unified diff, attached to the action and never pushed. With no patch to propose it raises
    NoPatch with the reason: a patch action never ends done without a patch."""
    with GitHubRepo.open(config.github, journal) as repo:
        change = _change(proposal, repo, config)
    return Artifact(
        "patch", patch=change.diff, details={"patch_note": change.note, **_change_details(change)}
    )


def branch_for(proposal: ActionProposal) -> str:
    """The branch a pull request of this action is opened from (found again by it on a retry)."""
    return f"rootline/action-{proposal.pk}"


def open_pull_request(proposal: ActionProposal, config: ActionsConfig, journal: Journal) -> Artifact:
    """A branch, a commit of the patch (the revert, or the configuration change) and a labelled pull
    request; never merged."""
    branch = branch_for(proposal)
    with GitHubRepo.open(config.github, journal) as repo:
        change = _change(proposal, repo, config)
        body = artifact_body(
            proposal, config, change.note + "\n\nOpened by Rootline after approval; merge it yourself."
        )
        details: dict[str, Any] = {
            "branch": branch,
            "title": proposal.title,
            "body": body,
            "patch_note": change.note,
        }
        existing = repo.find_pull(branch) if repo.repo else None
        if existing is not None:
            repo.add_labels(int(existing["number"]), [config.label])
            details |= {"number": existing.get("number"), "found": True}
            return Artifact(
                "pull_request", url=str(existing.get("html_url") or ""), patch=change.diff, details=details
            )
        base = repo.default_branch()
        base_head = repo.branch_head(base)
        if base_head is None:
            raise ActionError(f"the default branch {base} has no head commit")
        existed = repo.branch_head(branch) is not None
        if not existed:
            repo.create_branch(branch, base_head)
        for file_diff in change.files:
            _commit_file(repo, file_diff, change, base, branch, existed)
        made = repo.create_pull(proposal.title, body, branch, base)
        number = made.get("number")
        repo.add_labels(int(number) if number is not None else None, [config.label])
    details |= {"number": number, "base": base}
    return Artifact("pull_request", url=str(made.get("html_url") or ""), patch=change.diff, details=details)


def _commit_file(
    repo: GitHubRepo, change: FileDiff, proposed: ProposedChange, base: str, branch: str, existed: bool
) -> None:
    """Commit one changed file on `branch`, computed from the base branch's copy; a file the branch
    already holds as changed (a redelivered task) is left alone."""
    on_base = repo.file(change.path, base)
    if on_base is None and change.status != "added":
        raise ActionError(f"{change.path} does not exist on {base}")
    try:
        target = change.apply(on_base[0] if on_base else "")
    except PatchError as exc:
        raise ActionError(f"the patch no longer applies to {base}: {exc}") from exc
    if change.status == "added" and on_base is not None and on_base[0] != target:
        raise ActionError(f"{change.path} exists again on {base} with other content")
    current = repo.file(change.path, branch) if existed else on_base
    if (current[0] if current else None) == target:
        return
    if target is None:
        assert current is not None  # equal above otherwise
        repo.delete_file(change.path, proposed.message, branch, current[1])
    else:
        repo.put_file(change.path, target, proposed.message, branch, current[1] if current else None)


EXECUTORS: dict[ActionTier, Callable[[ActionProposal, ActionsConfig, Journal], Artifact]] = {
    ActionTier.NOTIFY: notify,
    ActionTier.ISSUE: open_issue,
    ActionTier.PATCH: propose_patch,
    ActionTier.PULL_REQUEST: open_pull_request,
}
