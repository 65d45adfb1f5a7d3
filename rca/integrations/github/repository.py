"""GitHub's repository writer: the REST calls the issue, patch and pull-request actions make.

Every exchange is written to a `Journal` that the action page shows. Reads (a commit, a file, whether
an issue or branch already exists) are always sent: they build the artifact and change nothing. Writes
are sent only when the journal is not in dry run; in dry run the journal keeps the exact request
that would have been sent, and the caller carries on with what GitHub's answer is known to hold.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any

from rca.integrations.github.config import HEADERS, GitHubConfig
from rca.integrations.http import HttpClient, IntegrationError, writing_client
from rca.integrations.journal import Journal
from rca.integrations.parsing import as_dict, as_list, as_str, opt_str

MAX_PAGES = 10  # of 100 issues each, when looking an issue up by its marker
_NO_REPOSITORY = "no GitHub repository is configured (set GITHUB_REPOSITORY and GITHUB_TOKEN)"


class RepositoryError(IntegrationError):
    """The repository cannot do what was asked (nothing configured, a PR not merged, not a file)."""


class GitHubRepo:
    """One repository's REST API, journalled; writes are held back in dry run."""

    def __init__(self, repo: str | None, client: HttpClient, journal: Journal) -> None:
        self.repo = repo
        self.client = client
        self.journal = journal

    @classmethod
    def open(cls, config: GitHubConfig | None, journal: Journal) -> GitHubRepo:
        """The configured repository (writes get the longer write budget); with none configured, every
        read and sent write says so."""
        url, token = (config.url, config.token) if config else (GitHubConfig.default_url, None)
        client = writing_client(GitHubConfig.name, url, token, HEADERS, budget_s=journal.budget_s)
        return cls(config.repo if config else None, client, journal)

    def __enter__(self) -> GitHubRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    # --- plumbing ---

    def _path(self, suffix: str) -> str:
        return f"/repos/{self.repo or '{GITHUB_REPOSITORY}'}{suffix}"

    def _url(self, path: str) -> str:
        return f"{self.client.base_url}".rstrip("/") + path

    def read(self, suffix: str, params: Mapping[str, str] | None = None, allow: tuple[int, ...] = ()) -> Any:
        """GET a JSON document of the repository (None for a status in `allow`, e.g. 404)."""
        if self.repo is None:
            raise RepositoryError(_NO_REPOSITORY)
        self.journal.before_read()
        path = self._path(suffix)
        entry = self.journal.record("GET", self._url(path), sent=True)
        response = self.client.request("GET", path, params=params, allow=allow)
        entry["status"] = response.status_code
        return None if response.status_code in allow else self.client.decode(response)

    def write(self, method: str, suffix: str, payload: Mapping[str, Any], would_return: Any) -> Any:
        """Send a write (its JSON answer), or in dry run record it and return `would_return`."""
        path = self._path(suffix)
        entry = self.journal.record(method, self._url(path), dict(payload), sent=not self.journal.dry_run)
        if self.journal.dry_run:
            return would_return
        if self.repo is None:
            raise RepositoryError(_NO_REPOSITORY)
        response = self.client.request(method, path, json=dict(payload))
        entry["status"] = response.status_code
        return self.client.decode(response)

    def _pages(self, suffix: str, params: dict[str, str]) -> Iterator[dict[str, Any]]:
        if self.repo is None:
            return
        self.journal.before_read()
        url: str | None = self._path(suffix)
        query: dict[str, str] | None = params
        for _ in range(MAX_PAGES):
            if url is None:
                return
            self.journal.record("GET", self._url(url), sent=True)
            body, url = self.client.get_page(url, query)
            query = None  # the next link carries the query
            with self.client.parsing(suffix):
                yield from (as_dict(item, "item") for item in as_list(body, "list"))

    # --- issues ---

    def find_issue(self, marker: str, label: str) -> dict[str, Any] | None:
        """An issue (not a pull request) carrying `marker` in its body among those labelled `label`.

        The list endpoint is read rather than search: search is eventually consistent, so a
        redelivery right after the first attempt could miss the issue it opened.
        """
        params = {"state": "all", "labels": label, "per_page": "100", "sort": "created", "direction": "desc"}
        for item in self._pages("/issues", params):
            if "pull_request" not in item and marker in (opt_str(item.get("body")) or ""):
                return item
        return None

    def create_issue(self, title: str, body: str, labels: list[str]) -> dict[str, Any]:
        """Open an issue; its JSON (in dry run: no number or address yet)."""
        payload = {"title": title, "body": body, "labels": labels}
        return dict(self.write("POST", "/issues", payload, {"number": None, "html_url": ""}))

    # --- commits and files ---

    def commit(self, sha: str) -> dict[str, Any]:
        """One commit with its files and their patches."""
        return dict(self.read(f"/commits/{sha}"))

    def last_commit_touching(self, path: str, until: str) -> dict[str, Any] | None:
        """The newest commit that changed `path` at or before `until` (RFC 3339), or None."""
        found = self.read("/commits", {"path": path, "until": until, "per_page": "1"})
        with self.client.parsing("commits"):
            items = as_list(found, "commits")
            return as_dict(items[0], "commit") if items else None

    def merge_commit(self, number: int) -> str:
        """The commit a merged pull request landed as."""
        pull = as_dict(self.read(f"/pulls/{number}"), "pull request")
        sha = opt_str(pull.get("merge_commit_sha"))
        if not pull.get("merged_at") or not sha:
            raise RepositoryError(f"pull request #{number} is not merged, so there is nothing to revert")
        return sha

    def default_branch(self) -> str:
        """The branch pull requests go to."""
        with self.client.parsing("repository"):
            return as_str(as_dict(self.read(""), "repository").get("default_branch"), "default_branch")

    def branch_head(self, branch: str) -> str | None:
        """The commit a branch points at, or None when there is no such branch."""
        ref = self.read(f"/git/ref/heads/{branch}", allow=(404,))
        if ref is None:
            return None
        with self.client.parsing("ref"):
            return as_str(as_dict(as_dict(ref, "ref").get("object"), "ref.object").get("sha"), "sha")

    def create_branch(self, branch: str, sha: str) -> None:
        """Create `branch` at commit `sha`."""
        payload = {"ref": f"refs/heads/{branch}", "sha": sha}
        self.write("POST", "/git/refs", payload, {"ref": payload["ref"], "object": {"sha": sha}})

    def file(self, path: str, ref: str) -> tuple[str, str] | None:
        """(text, blob sha) of a file on `ref`, or None when it does not exist there."""
        found = self.read(f"/contents/{path}", {"ref": ref}, allow=(404,))
        if found is None:
            return None
        with self.client.parsing(f"contents of {path}"):
            doc = as_dict(found, "contents")
            if doc.get("type") != "file" or doc.get("encoding") != "base64":
                raise RepositoryError(f"{path} is not a regular file on {ref}")
            text = base64.b64decode(as_str(doc.get("content"), "content")).decode("utf-8")
            return text, as_str(doc.get("sha"), "sha")

    def put_file(self, path: str, text: str, message: str, branch: str, blob: str | None) -> None:
        """Commit `text` as `path` on `branch` (replacing blob `blob` when the file exists)."""
        payload: dict[str, Any] = {
            "message": message,
            "content": base64.b64encode(text.encode("utf-8")).decode("ascii"),
            "branch": branch,
        }
        if blob is not None:
            payload["sha"] = blob
        self.write("PUT", f"/contents/{path}", payload, {"content": {"path": path}})

    def delete_file(self, path: str, message: str, branch: str, blob: str) -> None:
        """Commit the removal of `path` on `branch`."""
        payload = {"message": message, "sha": blob, "branch": branch}
        self.write("DELETE", f"/contents/{path}", payload, {"content": None})

    # --- pull requests ---

    def find_pull(self, branch: str) -> dict[str, Any] | None:
        """The pull request (open or closed) whose head is `branch` of this repository, if any."""
        owner = (self.repo or "").split("/")[0]
        found = self.read("/pulls", {"head": f"{owner}:{branch}", "state": "all", "per_page": "1"})
        with self.client.parsing("pulls"):
            items = as_list(found, "pulls")
            return as_dict(items[0], "pull request") if items else None

    def create_pull(self, title: str, body: str, head: str, base: str) -> dict[str, Any]:
        """Open a pull request from `head` into `base`; its JSON (in dry run: no number yet)."""
        payload = {"title": title, "body": body, "head": head, "base": base, "maintainer_can_modify": True}
        return dict(self.write("POST", "/pulls", payload, {"number": None, "html_url": ""}))

    def add_labels(self, number: int | None, labels: list[str]) -> None:
        """Label an issue or pull request (`number` None: the one a dry run would have opened)."""
        target = "{number}" if number is None else str(number)
        self.write("POST", f"/issues/{target}/labels", {"labels": labels}, [{"name": n} for n in labels])
