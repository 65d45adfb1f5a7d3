"""GitHub's change reader: commits and merged pull requests of one repository in a window, as Events."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rca.integrations.http import HttpClient, Params
from rca.integrations.parsing import as_dict, as_int, as_list, as_str, opt_str, parse_rfc3339, to_rfc3339
from rca.telemetry.model import Event, EventKind, TimeWindow


class GitHubConnector:
    """Change events (commits, merged PRs) for one repository.

    Entities: a commit or PR belongs to every service whose configured path prefix it touches
    (`paths`: `{"src/cartservice": "cartservice"}`); one that touches none, or any change when
    no mapping is configured, belongs to `default_service` (the repository name by default).
    """

    def __init__(
        self,
        client: HttpClient,
        *,
        repo: str,
        paths: Mapping[str, str] | None = None,
        default_service: str | None = None,
        branch: str | None = None,
        per_page: int = 100,
        max_pages: int = 5,
        max_pulls: int = 50,
    ) -> None:
        owner, sep, name = repo.partition("/")
        if not sep or not owner or not name or "/" in name:
            raise ValueError(f"GitHub repository must be 'owner/name', got {repo!r}")
        self.client = client
        self.repo = repo
        self.paths = {prefix.strip("/"): service for prefix, service in (paths or {}).items()}
        self.default_service = default_service or name
        self.branch = branch
        self.per_page = per_page
        self.max_pages = max_pages  # Link-header pages per listing
        self.max_pulls = max_pulls  # merged PRs whose files are fetched (one request each)

    # --- listings ---

    def _pages(
        self, path: str, params: Params | None, stop: Callable[[dict[str, Any]], bool] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Items of a paginated list endpoint, following `Link: rel="next"` for at most max_pages."""
        url: str | None = path
        for _ in range(self.max_pages):
            if url is None:
                return
            body, url = self.client.get_page(url, params)
            params = None  # the next link already carries the query
            with self.client.parsing(path):
                items = [as_dict(i, "item") for i in as_list(body, "list")]
            for item in items:
                if stop is not None and stop(item):
                    return
                yield item

    def commit_items(self, window: TimeWindow, path: str | None = None) -> list[dict[str, Any]]:
        """Raw commits committed inside `window` (touching `path` when given)."""
        params: dict[str, str] = {
            "since": to_rfc3339(window.start),
            "until": to_rfc3339(window.end),
            "per_page": str(self.per_page),
        }
        if self.branch:
            params["sha"] = self.branch
        if path:
            params["path"] = path
        items = list(self._pages(f"/repos/{self.repo}/commits", params))
        with self.client.parsing("commits"):
            return [c for c in items if window.contains(_commit_time(c))]

    def merged_pulls(self, window: TimeWindow) -> list[dict[str, Any]]:
        """Raw pull requests merged inside `window` (newest update first, at most max_pulls)."""
        params = {"state": "closed", "sort": "updated", "direction": "desc", "per_page": str(self.per_page)}

        def older_than_window(pr: dict[str, Any]) -> bool:
            # Sorted by update time, newest first; merged_at <= updated_at, so once updates
            # predate the window no later page can hold a PR merged inside it.
            updated = opt_str(pr.get("updated_at"))
            return updated is not None and parse_rfc3339(updated, "updated_at") < window.start

        with self.client.parsing("pulls"):
            pulls = [
                pr
                for pr in self._pages(f"/repos/{self.repo}/pulls", params, stop=older_than_window)
                if opt_str(pr.get("merged_at"))
                and window.contains(parse_rfc3339(pr["merged_at"], "merged_at"))
            ]
        return pulls[: self.max_pulls]

    def pull_files(self, number: int) -> list[str]:
        """Paths a pull request changes."""
        files = self._pages(f"/repos/{self.repo}/pulls/{number}/files", {"per_page": str(self.per_page)})
        with self.client.parsing(f"files of #{number}"):
            return [as_str(f.get("filename"), "filename") for f in files]

    # --- events ---

    def services_for(self, files: list[str]) -> list[str]:
        """Services whose path prefix any of `files` falls under (else the default service)."""
        found = {
            service
            for prefix, service in self.paths.items()
            for f in files
            if not prefix or f == prefix or f.startswith(prefix + "/")
        }
        return sorted(found) or [self.default_service]

    def events(self, window: TimeWindow, entity: str | None = None) -> list[Event]:
        """Commit and merged-PR events inside `window` (about `entity` when given)."""
        out = self._commit_events(window) + self._pull_events(window)
        if entity is not None:
            out = [e for e in out if e.entity == entity]
        return sorted(out, key=lambda e: (e.time, e.kind, e.entity, e.reference or ""))

    def _commit_events(self, window: TimeWindow) -> list[Event]:
        commits = self.commit_items(window)
        services: dict[str, set[str]] = {}
        # The commits API filters by path server-side, which spares one request per commit.
        for prefix, service in self.paths.items():
            for commit in self.commit_items(window, prefix):
                services.setdefault(str(commit.get("sha")), set()).add(service)
        out: list[Event] = []
        with self.client.parsing("commits"):
            for commit in commits:
                sha = as_str(commit.get("sha"), "sha")
                detail = as_dict(commit.get("commit"), "commit")
                message = opt_str(detail.get("message")) or ""
                author = as_dict(commit.get("author") or {}, "author").get("login") or as_dict(
                    detail.get("author") or {}, "commit.author"
                ).get("name")
                for service in sorted(services.get(sha, set())) or [self.default_service]:
                    out.append(
                        Event(
                            time=_commit_time(commit),
                            entity=service,
                            kind=EventKind.COMMIT,
                            message=message.splitlines()[0] if message else "",
                            reference=sha,
                            attributes=_attrs(repo=self.repo, author=author, url=commit.get("html_url")),
                        )
                    )
        return out

    def _pull_events(self, window: TimeWindow) -> list[Event]:
        out: list[Event] = []
        for pr in self.merged_pulls(window):
            with self.client.parsing("pulls"):
                number = as_int(pr.get("number"), "number")
                merged_at = parse_rfc3339(pr.get("merged_at"), "merged_at")
                title = opt_str(pr.get("title")) or ""
                author = as_dict(pr.get("user") or {}, "user").get("login")
                base = as_dict(pr.get("base") or {}, "base").get("ref")
            services = self.services_for(self.pull_files(number)) if self.paths else [self.default_service]
            for service in services:
                out.append(
                    Event(
                        time=merged_at,
                        entity=service,
                        kind=EventKind.PULL_REQUEST,
                        message=title,
                        reference=f"#{number}",
                        attributes=_attrs(
                            repo=self.repo,
                            author=author,
                            url=pr.get("html_url"),
                            base=base,
                            merge_commit_sha=pr.get("merge_commit_sha"),
                        ),
                    )
                )
        return out


def _commit_time(commit: dict[str, Any]) -> float:
    # The committer date is when the change landed on the branch (what `since`/`until` filter on).
    detail = as_dict(commit.get("commit"), "commit")
    who = as_dict(detail.get("committer") or detail.get("author") or {}, "commit.committer")
    return parse_rfc3339(who.get("date"), "commit date")


def _attrs(**values: Any) -> dict[str, str]:
    return {k: str(v) for k, v in values.items() if isinstance(v, str | int) and v != ""}
