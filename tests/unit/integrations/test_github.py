"""GitHub connector against recorded REST v3 exchanges (commits, pulls, pull files)."""

from __future__ import annotations

import httpx
import pytest
import respx

from rca.integrations.github.changes import GitHubConnector
from rca.integrations.github.config import HEADERS as GITHUB_HEADERS
from rca.integrations.http import BackendError
from rca.telemetry.model import EventKind

from .recorded import WINDOW, reply

URL = "https://api.github.com"
C1 = "3f7c9e1a2b4d6f8091a2b3c4d5e6f708192a3b4c"
C2 = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


def _mock(mock: respx.MockRouter) -> dict[str, respx.Route]:
    return {
        "page2": mock.get("/repos/acme/shop/commits", params__contains={"page": "2"}).mock(
            return_value=reply("github", "commits_page2")
        ),
        "cart": mock.get("/repos/acme/shop/commits", params__contains={"path": "src/cartservice"}).mock(
            return_value=reply("github", "commits_cart_path")
        ),
        "page1": mock.get("/repos/acme/shop/commits").mock(return_value=reply("github", "commits_page1")),
        "pulls2": mock.get("/repos/acme/shop/pulls", params__contains={"page": "2"}).mock(
            return_value=reply("github", "pulls_empty")
        ),
        "pulls": mock.get("/repos/acme/shop/pulls").mock(return_value=reply("github", "pulls_page1")),
        "files": mock.get("/repos/acme/shop/pulls/101/files").mock(
            return_value=reply("github", "pull_files")
        ),
    }


def test_commits_and_merged_pulls_in_the_window(make_client) -> None:
    github = GitHubConnector(make_client("github", URL, headers=GITHUB_HEADERS), repo="acme/shop")
    with respx.mock(base_url=URL, assert_all_called=False) as mock:
        routes = _mock(mock)
        events = github.events(WINDOW)
    first = routes["page1"].calls[0].request
    assert first.url.params["since"] == "2024-05-01T10:00:00Z"
    assert first.url.params["until"] == "2024-05-01T10:10:00Z"
    assert first.headers["x-github-api-version"] == "2022-11-28"
    assert first.headers["authorization"] == "Bearer s3cret-token-value"
    assert routes["page2"].call_count == 1  # followed the Link header
    assert routes["pulls"].call_count == 1
    assert not routes["pulls2"].called
    assert not routes["files"].called  # no path mapping: no per-PR file listing

    got = [(e.kind, e.reference, e.entity) for e in events]
    assert got == [
        (EventKind.COMMIT, C2, "shop"),
        (EventKind.COMMIT, C1, "shop"),
        (EventKind.PULL_REQUEST, "#101", "shop"),
    ]  # the 09:59:59 commit, the unmerged #100 and #99 (merged at 09:00) are outside
    commit = events[1]
    assert commit.message == "cart: lower redis pool size to 4"
    assert commit.attributes["author"] == "alice"
    assert commit.time == pytest.approx(1714557792.0)
    pull = events[2]
    assert pull.message == "Lower Redis pool size"
    assert pull.attributes["merge_commit_sha"] == C1
    assert pull.attributes["base"] == "main"


def test_path_mapping_names_services(make_client) -> None:
    github = GitHubConnector(
        make_client("github", URL),
        repo="acme/shop",
        paths={"src/cartservice/": "cartservice"},
        default_service="platform",
    )
    with respx.mock(base_url=URL, assert_all_called=False) as mock:
        routes = _mock(mock)
        events = github.events(WINDOW)
        cart_only = github.events(WINDOW, entity="cartservice")
    assert routes["cart"].called
    assert routes["files"].called
    assert {(e.reference, e.entity) for e in events} == {
        (C2, "platform"),
        (C1, "cartservice"),
        ("#101", "cartservice"),
    }
    assert [e.reference for e in cart_only] == [C1, "#101"]


def test_exhausted_quota_waits_for_the_reset_when_it_is_near(make_client, sleeps) -> None:
    github = GitHubConnector(make_client("github", URL, wall_clock=lambda: 1714561200 - 12), repo="acme/shop")
    with respx.mock(base_url=URL, assert_all_called=False) as mock:
        mock.get("/repos/acme/shop/pulls").mock(return_value=reply("github", "pulls_empty"))
        mock.get("/repos/acme/shop/commits").mock(
            side_effect=[reply("github", "quota_exhausted"), reply("github", "commits_empty")]
        )
        assert github.events(WINDOW) == []
    assert sleeps == [12.0]


def test_exhausted_quota_far_from_reset_fails_at_once(make_client, sleeps) -> None:
    github = GitHubConnector(make_client("github", URL, wall_clock=lambda: 1714557600), repo="acme/shop")
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/repos/acme/shop/commits").mock(return_value=reply("github", "quota_exhausted"))
        with pytest.raises(BackendError) as err:
            github.events(WINDOW)
    assert route.call_count == 1
    assert sleeps == []
    assert err.value.backend == "github"
    assert "server asked to wait 3600 s, beyond the 30 s retry budget" in err.value.reason
    assert "API rate limit exceeded" in err.value.reason


def test_not_found_is_not_retried(make_client, sleeps) -> None:
    github = GitHubConnector(make_client("github", URL), repo="acme/shop")
    with respx.mock(base_url=URL) as mock:
        mock.get("/repos/acme/shop/commits").mock(return_value=reply("github", "not_found"))
        with pytest.raises(
            BackendError,
            match=r"^github: GET https://api.github.com/repos/acme/shop/commits failed with HTTP 404",
        ):
            github.events(WINDOW)
    assert sleeps == []


def test_pagination_link_to_another_host_is_refused(make_client) -> None:
    github = GitHubConnector(make_client("github", URL), repo="acme/shop")
    evil = httpx.Response(200, json=[], headers={"Link": '<https://evil.example/steal?page=2>; rel="next"'})
    with respx.mock(base_url=URL) as mock:
        mock.get("/repos/acme/shop/commits").mock(return_value=evil)
        with pytest.raises(BackendError, match="another host"):
            github.events(WINDOW)


def test_repository_must_be_owner_slash_name(make_client) -> None:
    with pytest.raises(ValueError, match="owner/name"):
        GitHubConnector(make_client("github", URL), repo="shop")
