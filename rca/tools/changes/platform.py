"""Kubernetes warning events as evidence about a fault kind at an entity: an OOM kill supports a memory
fault, a crash loop (back-off restarting a container) a pod failure.

The reasons are the kubelet's and the node problem detector's own (`OOMKilling`, `OOMKilled` as a
container's last state; `BackOff` / `CrashLoopBackOff` for a restarting container), read from the event's
`k8s.event.reason` attribute (the Kubernetes connector's) or its message.
"""

from __future__ import annotations

import re

from rca.telemetry.model import Event, EventKind
from rca.tools.base import ToolContext, ToolResult
from rca.tools.faults import FaultKind

_OOM = re.compile(r"\boom ?kill(?:ed|ing)?\b|out of memory", re.IGNORECASE)
_CRASH_LOOP = re.compile(r"\bcrash ?loop ?back ?off\b|back-?off restarting", re.IGNORECASE)
# Which warning supports which kind, and the verdict signal (rca.core.verdict) that counts it.
_SUPPORTS: dict[FaultKind, tuple[re.Pattern[str], str, str]] = {
    FaultKind.MEMORY: (_OOM, "oom_kills", "OOM kill"),
    FaultKind.POD_FAILURE: (_CRASH_LOOP, "restarts", "crash-loop restart"),
}
_PLATFORM = frozenset({EventKind.K8S_WARNING, EventKind.POD_RESTART})


def _text(event: Event) -> str:
    return f"{event.attributes.get('k8s.event.reason', '')} {event.message}"


def platform_warnings(ctx: ToolContext, entity: str, kind: str) -> ToolResult | None:
    """The warnings at `entity` in the incident window that support a fault of `kind`; None when the
    kind is not one a warning speaks to, or no such warning was seen (nothing to say either way)."""
    try:
        rule = _SUPPORTS[FaultKind(kind)]
    except (KeyError, ValueError):
        return None
    pattern, signal, what = rule
    seen = [
        e for e in ctx.source.events(ctx.incident, entity) if e.kind in _PLATFORM and pattern.search(_text(e))
    ]
    if not seen:
        return None
    # A repeated event counts each repetition (the API folds them into one object with a count).
    count = sum(int(e.attributes.get("k8s.event.count", "1") or 1) for e in seen)
    first = min(seen, key=lambda e: e.time)
    return ToolResult(
        summary=f"changes: {count} Kubernetes {what} warning(s) at {entity}, first: {first.message[:120]}",
        signals={signal: count},
        measurements={
            "first_warning_at": first.time,
            "warning_reason": first.attributes.get("k8s.event.reason", ""),
        },
    )
