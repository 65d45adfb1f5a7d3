"""GitHub's configuration, shared by the change reader (live telemetry) and the repository writer
(actions): `GITHUB_REPOSITORY` (`owner/name`; unset: off) and `GITHUB_TOKEN`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Self

from rca import env
from rca.integrations.config import BackendConfig

REPOSITORY_ENV = "GITHUB_REPOSITORY"
TOKEN_ENV = "GITHUB_TOKEN"  # noqa: S105  (the variable's name, not a secret)
API_URL = "https://api.github.com"
# GitHub's REST API media type and the API version every call is written against.
HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}


@dataclass(frozen=True)
class GitHubConfig(BackendConfig):
    """One repository on GitHub's REST API; the token needs read access for changes, and issues,
    contents and pull-request write access for actions."""

    url: str = API_URL
    repo: str = ""  # owner/name

    name: ClassVar[str] = "github"
    default_url: ClassVar[str] = API_URL
    headers: ClassVar[Mapping[str, str]] = HEADERS

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """GITHUB_REPOSITORY and GITHUB_TOKEN (the API is always api.github.com)."""
        return (REPOSITORY_ENV, TOKEN_ENV)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self | None:
        """The repository and token; None when GITHUB_REPOSITORY is unset."""
        repo = env.text(environ, REPOSITORY_ENV)
        if repo is None:
            return None
        if repo.count("/") != 1 or repo.startswith("/") or repo.endswith("/"):
            raise env.ConfigError(f"{REPOSITORY_ENV}={repo!r} is not owner/name")
        return cls(repo=repo, token=env.text(environ, TOKEN_ENV))
