"""Small display filters for the pages (labels, numbers), so templates stay free of logic."""

from __future__ import annotations

import json
from typing import Any

from django import template

from frontend.labels import TIER_LABELS

register = template.Library()


@register.filter
def tier_label(value: str | None) -> str:
    """`pull_request` -> `pull request`; empty stays empty."""
    return TIER_LABELS.get(value or "", (value or "").replace("_", " "))


@register.filter
def words(value: Any) -> str:
    """An enum value in words: `partially_grounded` -> `partially grounded`."""
    return str(value or "").replace("_", " ")


@register.filter
def confidence(value: float | None) -> str:
    """A confidence with two decimals, or an em dash when there is none."""
    return "\u2014" if value is None else f"{float(value):.2f}"


@register.filter
def signal(value: Any) -> str:
    """A numeric signal with a sensible number of digits."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:.4g}"


@register.filter
def pretty_json(value: Any) -> str:
    """A request payload as indented JSON, for the action page's execution record."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


@register.filter
def diff_lines(patch: str) -> list[tuple[str, str]]:
    """A unified diff's lines with a class each (add, del, hunk, file, ctx), so the page colours it."""
    out = []
    for line in (patch or "").splitlines():
        if line.startswith(("+++", "---", "diff --git")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            kind = {"+": "add", "-": "del"}.get(line[:1], "ctx")
        out.append((kind, line))
    return out
