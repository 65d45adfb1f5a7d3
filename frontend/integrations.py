"""The integrations page: every external system of `rca.integrations.registry`, configured or not,
reachable or not, and the variables that set it; and each action executor with what it sends through.

Reachability is a TCP connection to the system's host and port within the health deadline
(ROOTLINE_HEALTH_TIMEOUT_S), all systems at once: it says whether something answers there, and
sends nothing (no request to a chat webhook or a repository).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from django.conf import settings

from rca.actions.preview import MANIFEST_ENV
from rca.config import ActionsConfig
from rca.core.actions import ActionTier
from rca.integrations import registry
from rca.integrations.github.config import API_URL
from rca.telemetry.model import Modality

# A URL without a port is reached at its scheme's well-known port (RFC 7230 for http and https).
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Reach:
    """Whether a configured system answered at its address within the deadline, and the detail."""

    ok: bool
    detail: str


@dataclass(frozen=True)
class SystemRow:
    """One external system on the page."""

    name: str
    role: str
    variables: tuple[str, ...]
    configured: bool
    address: str
    reach: Reach | None  # None when not configured


@dataclass(frozen=True)
class ExecutorRow:
    """One action executor: what it sends through and whether it would send for real."""

    tier: str
    through: str
    ready: bool
    detail: str


def _address(url: str) -> tuple[str, int] | None:
    parsed = urlparse(url)
    if not parsed.hostname:
        return None
    return parsed.hostname, parsed.port or _DEFAULT_PORTS.get(parsed.scheme, 80)


def _connect(address: tuple[str, int] | None, timeout: float) -> Reach:
    if address is None:
        return Reach(False, "no host to reach")
    try:
        with socket.create_connection(address, timeout=timeout):
            return Reach(True, f"{address[0]}:{address[1]} accepts connections")
    except OSError as exc:
        return Reach(False, f"{address[0]}:{address[1]}: {exc.strerror or type(exc).__name__}")


def _role(system: registry.System) -> str:
    if system.modality is Modality.CHANGES:
        return "change history (telemetry) and issue, patch and pull-request actions"
    if system.modality is not None:
        return f"{system.modality.value} (telemetry)"
    return "notifications"


def _configured(actions: ActionsConfig, telemetry: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Configured system name -> the address it is reached at."""
    found = {name: str(raw.get("url") or "") for name, raw in telemetry.items()}
    if actions.github is not None:
        found.setdefault("github", actions.github.url or API_URL)
    for channel in actions.channels:
        if channel.name == "slack":
            found["slack"] = channel.webhook_url
        elif channel.name == "email":
            found["email"] = f"smtp://{settings.EMAIL_HOST}:{settings.EMAIL_PORT}"
    return found


def systems() -> list[SystemRow]:
    """Every system of the registry, in its order, with its reachability checked concurrently."""
    actions: ActionsConfig = settings.ROOTLINE_ACTIONS
    configured = _configured(actions, settings.ROOTLINE_LIVE_TELEMETRY)
    timeout = settings.ROOTLINE_RELIABILITY.health_timeout_s
    with ThreadPoolExecutor(max_workers=len(registry.SYSTEMS)) as pool:
        reaches = {
            name: pool.submit(_connect, _smtp(url) if name == "email" else _address(url), timeout)
            for name, url in configured.items()
        }
        return [
            SystemRow(
                name=s.name,
                role=_role(s),
                variables=s.config.env_names(),
                configured=s.name in configured,
                # A webhook's path is its secret: only its origin is shown.
                address=_origin(configured[s.name]) if s.name in configured else "",
                reach=reaches[s.name].result() if s.name in reaches else None,
            )
            for s in registry.SYSTEMS
        ]


def _smtp(url: str) -> tuple[str, int] | None:
    parsed = urlparse(url)
    return (parsed.hostname, parsed.port or 25) if parsed.hostname else None


def _origin(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}" if parsed.netloc else url


def executors() -> list[ExecutorRow]:
    """The four action executors: what each sends through, and whether it can send for real."""
    actions: ActionsConfig = settings.ROOTLINE_ACTIONS
    mode = "dry run: records what it would send" if actions.dry_run else "sends for real"
    channels = ", ".join(c.name for c in actions.channels)
    repo = actions.github.repo if actions.github is not None else ""
    manifest = actions.manifest_path or f"unset ({MANIFEST_ENV}): a deploy citation gets no patch"
    return [
        ExecutorRow(
            ActionTier.NOTIFY.value,
            channels or "Rootline only (no Slack webhook or e-mail address)",
            bool(channels),
            mode,
        ),
        *(
            ExecutorRow(
                tier.value,
                f"GitHub {repo}" if repo else "GitHub: no repository (GITHUB_REPOSITORY)",
                bool(repo),
                f"{mode}; manifest {manifest}" if tier is not ActionTier.ISSUE else mode,
            )
            for tier in (ActionTier.ISSUE, ActionTier.PATCH, ActionTier.PULL_REQUEST)
        ),
    ]
