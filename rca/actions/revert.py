"""The concrete change a patch or pull request proposes: the revert of the change the evidence cites.

* a commit citation: the revert of that commit, fetched from GitHub;
* a pull-request citation: the revert of the commit it was merged as;
* a deploy or config citation: the revert of the last commit that changed the service's manifest
  (`ROOTLINE_ACTIONS_MANIFEST_PATH`) at or before the change, limited to that manifest: the rollback
  of the release, as a diff against the manifest the deploy applied;
* anything else, or a change that cannot be fetched: no patch, and `NoPatch` says why. Nothing is
  ever made up to fill the gap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rca.actions.diffs import Change, FileDiff, FileStatus, PatchError, parse_hunks
from rca.actions.errors import ActionError
from rca.integrations.github.repository import GitHubRepo
from rca.integrations.parsing import as_dict, as_list, as_str, opt_str, to_rfc3339

_STATUSES: dict[str, FileStatus] = {"modified": "modified", "added": "added", "removed": "removed"}


class NoPatch(ActionError):
    """There is no honest patch to propose; the message says why."""


@dataclass(frozen=True, slots=True)
class Revert(Change):
    """The revert of one commit (or of its part that touched one manifest)."""

    commit: str

    @property
    def message(self) -> str:
        """A commit message for the revert."""
        return f'Revert "{self.title}"\n\nThis reverts commit {self.commit}.'


def revert_for(citation: Mapping[str, Any] | None, repo: GitHubRepo, manifest_path: str | None) -> Revert:
    """The revert the cited change calls for; raises NoPatch with the reason when there is none."""
    if not citation:
        raise NoPatch(
            "the conclusion cites no change (commit, pull request, deploy or config change) to revert, "
            "and the offline policy drafts no other patch"
        )
    kind, ref = str(citation.get("kind")), str(citation.get("ref"))
    if repo.repo is None:
        raise NoPatch(f"no GitHub repository is configured (GITHUB_REPOSITORY) to fetch {kind} {ref} from")
    if kind == "commit":
        return _revert(repo, ref, None, f"Reverts commit {ref}, the change the evidence cites.")
    if kind == "pr":
        number = int(ref.lstrip("#"))
        sha = repo.merge_commit(number)
        return _revert(repo, sha, None, f"Reverts {sha[:12]}, the merge of pull request #{number}.")
    if manifest_path is None:
        raise NoPatch(
            f"the {kind} {ref} of {citation.get('entity')} names no manifest in the repository "
            "(set ROOTLINE_ACTIONS_MANIFEST_PATH, e.g. kubernetes-manifests/{service}.yaml)"
        )
    path = manifest_path.format(service=citation.get("entity"))
    when = to_rfc3339(float(citation.get("at") or 0.0))
    last = repo.last_commit_touching(path, when)
    if last is None:
        raise NoPatch(f"no commit changed {path} at or before the {kind} {ref} ({when})")
    sha = as_str(last.get("sha"), "sha")
    note = (
        f"Rolls back the {kind} {ref} of {citation.get('entity')}: reverts {path} as commit "
        f"{sha[:12]} changed it, the last change to that manifest at or before {when}."
    )
    return _revert(repo, sha, path, note)


def _revert(repo: GitHubRepo, sha: str, only: str | None, note: str) -> Revert:
    commit = repo.commit(sha)
    with repo.client.parsing(f"commit {sha}"):
        full = as_str(commit.get("sha"), "sha")
        message = opt_str(as_dict(commit.get("commit"), "commit").get("message")) or ""
        files = [as_dict(f, "file") for f in as_list(commit.get("files") or [], "files")]
    diffs: list[FileDiff] = []
    for item in files:
        path = as_str(item.get("filename"), "filename")
        if only is not None and path != only:
            continue
        status = _STATUSES.get(str(item.get("status")))
        if status is None:
            raise NoPatch(f"{path} was {item.get('status')} in {full[:12]}; Rootline reverts only edits")
        patch = opt_str(item.get("patch"))
        if not patch:
            raise NoPatch(f"GitHub gives no text patch for {path} in {full[:12]} (binary or too large)")
        try:
            diffs.append(FileDiff(path, status, tuple(parse_hunks(patch))).reversed())
        except PatchError as exc:
            raise NoPatch(f"the patch of {path} in {full[:12]} cannot be read: {exc}") from exc
    if not diffs:
        where = f" to {only}" if only else ""
        raise NoPatch(f"commit {full[:12]} has no change{where} to revert")
    title = message.splitlines()[0] if message else full[:12]
    return Revert(title=title, files=tuple(diffs), note=note, commit=full)
