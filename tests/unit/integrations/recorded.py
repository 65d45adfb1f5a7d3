"""Replaying recorded HTTP exchanges (tests/unit/integrations/fixtures/*.json) with respx."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import httpx

from rca.telemetry.model import TimeWindow

FIXTURES = Path(__file__).parent / "fixtures"

# 2024-05-01T10:00:00Z .. 10:10:00Z, the window every fixture is recorded around.
WINDOW = TimeWindow(1714557600.0, 1714558200.0)


@cache
def _load(backend: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{backend}.json").read_text())


def exchange(backend: str, name: str) -> dict[str, Any]:
    """One recorded exchange: {"request": {...}, "response": {"status", "headers", "json" | "text"}}."""
    return _load(backend)[name]


def reply(backend: str, name: str) -> httpx.Response:
    """The recorded response of an exchange, as httpx would receive it."""
    recorded = exchange(backend, name)["response"]
    headers = recorded.get("headers", {})
    content = json.dumps(recorded["json"]).encode() if "json" in recorded else recorded["text"].encode()
    return httpx.Response(recorded["status"], headers=headers, content=content)


class Sleeps(list[float]):
    """Records requested backoff sleeps instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
