"""Browser tests: Playwright's sync API driving Debian's Chromium (/usr/bin/chromium) against the app
served by pytest-django's `live_server`. No browser download: Playwright's own builds are never used."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

CHROMIUM = Path(os.environ.get("ROOTLINE_CHROMIUM", "/usr/bin/chromium"))
REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO_ROOT / "test-artifacts" / "browser"
PASSWORD = "pw-123456!"
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
# Quiet, offline Chromium: no background traffic to Google, no first-run work, no sandbox (root in CI).
LAUNCH_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-extensions",
    "--metrics-recording-only",
    "--mute-audio",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the session; the tests skip with the reason when it can't run."""
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not installed at {CHROMIUM} (dev.py test installs it with apt)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed")
    # Playwright's sync API keeps an asyncio loop running in this thread; Django's ORM would take the
    # test's own (synchronous) queries for async ones and refuse them. Only while the browser is open.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            instance = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
            yield instance
            instance.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (test-artifacts/ is gitignored; CI keeps it as an artifact)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


class Session:
    """One browser context for one user, recording every request's host and every console error."""

    def __init__(self, browser: Any, base: str, artifacts: Path, who: str) -> None:
        self.context = browser.new_context(viewport={"width": 1360, "height": 900})
        self.page = self.context.new_page()
        self.base = base
        self.artifacts = artifacts
        self.who = who
        self.hosts: set[str] = set()
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.page.on("request", lambda request: self.hosts.add(urlsplit(request.url).hostname or request.url))
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on(
            "response",
            lambda r: (
                self.failed.append(f"{r.request.method} {urlsplit(r.url).path} {r.status}")
                if r.status >= 400
                else None
            ),
        )

    def _console(self, message: Any) -> None:
        # An HTTP error status is logged as "Failed to load resource"; those are checked via `failed`.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.errors.append(message.text)

    def goto(self, path: str) -> Any:
        return self.page.goto(self.base + path)

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.artifacts / f"{name}.png"), full_page=True)

    def login(self, username: str) -> None:
        self.goto("/login/")
        self.page.fill("input[name=username]", username)
        self.page.fill("input[name=password]", PASSWORD)
        self.page.click("form.login button[type=submit]")
        self.page.wait_for_url(re.compile(r".*/incidents/$"))

    def close(self) -> None:
        self.context.close()


def signed_in(
    sessions: list[Session], browser: Any, base: str, artifacts: Path, role: str, name: str
) -> Session:
    """A new user holding `role`, signed in in a browser session of its own (checked after the test)."""
    from django.contrib.auth.models import User

    from tests.integration.api import factories

    factories.user(role, name=name)
    account = User.objects.get(username=name)
    account.set_password(PASSWORD)
    account.save()
    session = Session(browser, base, artifacts, name)
    sessions.append(session)
    session.login(name)
    return session


@pytest.fixture
def sessions(browser: Any, live_server: Any, artifacts: Path) -> Iterator[list[Session]]:
    """Browser sessions opened by a test; afterwards every one must have stayed on the host."""
    opened: list[Session] = []
    yield opened
    for session in opened:
        session.close()
    for session in opened:
        assert session.hosts <= LOCAL_HOSTS, (
            f"{session.who} requested other hosts: {session.hosts - LOCAL_HOSTS}"
        )
        # A CSP violation (an inline style or script) shows up as a console error.
        assert not session.errors, f"{session.who} console errors: {session.errors}"
        # The only error statuses are the refused approvals the test provokes (403 on an action page).
        unexpected = [f for f in session.failed if not re.fullmatch(r"POST /actions/\d+/ 403", f)]
        assert not unexpected, f"{session.who} got error responses: {unexpected}"
