"""Browser tests: Playwright's sync API driving Debian's Chromium (/usr/bin/chromium) against the app
served by pytest-django's `live_server`. No browser download: Playwright's own builds are never used."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("ROOTLINE_CHROMIUM", "/usr/bin/chromium"))
REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO_ROOT / "test-artifacts" / "browser"
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
