"""Slack notifications through an incoming webhook, over the shared HTTP client."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from rca.integrations.http import HTTPFailure, writing_client
from rca.integrations.journal import Journal
from rca.integrations.slack.config import SlackConfig


def post_webhook(url: str, payload: Mapping[str, Any], journal: Journal) -> None:
    """POST `payload` to a webhook (Slack answers 200 "ok"), unless in dry run. The URL's path is
    the webhook's secret, so the journal and any error show it masked."""
    target = httpx.URL(url)
    origin = str(target.copy_with(raw_path=b"/")).rstrip("/")
    entry = journal.record("POST", f"{origin}/***", dict(payload), sent=not journal.dry_run)
    if journal.dry_run:
        return
    with writing_client(SlackConfig.name, origin) as client:
        try:
            response = client.request("POST", target.raw_path.decode("ascii"), json=dict(payload))
        except HTTPFailure as exc:
            masked = exc.reason.replace(target.path, "/***")
            raise HTTPFailure(exc.backend, masked, status=exc.status, transient=exc.transient) from None
    entry["status"] = response.status_code


class SlackChannel:
    """Posts the text of a notification to the configured incoming webhook."""

    name = SlackConfig.name

    def __init__(self, config: SlackConfig) -> None:
        self.config = config

    def send(self, subject: str, text: str, journal: Journal) -> None:
        """Post `text` (a Slack message has no subject line)."""
        del subject
        post_webhook(self.config.webhook_url, {"text": text}, journal)
