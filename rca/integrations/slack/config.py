"""Slack's configuration: `ROOTLINE_SLACK_WEBHOOK_URL`, an incoming webhook (unset: off)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Self

from rca import env

WEBHOOK_ENV = "ROOTLINE_SLACK_WEBHOOK_URL"


@dataclass(frozen=True)
class SlackConfig:
    """One incoming webhook; its path is its secret, so it stays out of reprs."""

    webhook_url: str = field(repr=False)

    name: ClassVar[str] = "slack"

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """ROOTLINE_SLACK_WEBHOOK_URL."""
        return (WEBHOOK_ENV,)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self | None:
        """The webhook; None when unset."""
        url = env.url(environ, WEBHOOK_ENV, None, ("https", "http"))
        return None if url is None else cls(url)
