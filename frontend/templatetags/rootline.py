"""Small display filters for the pages (labels, numbers), so templates stay free of logic."""

from __future__ import annotations

import json
import re
from typing import Any

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from frontend.glossary import GLOSSARY
from frontend.labels import TIER_LABELS
from rca.core.actions import CONFIDENCE_DECIMALS, shown_confidence

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
    """A confidence as the safety core decides on it (rca.core.actions.shown_confidence), or an em
    dash when there is none."""
    return "\u2014" if value is None else f"{shown_confidence(value):.{CONFIDENCE_DECIMALS}f}"


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


@register.simple_tag
def term(name: str, shown: str = "") -> SafeString:
    """A safety-core term (`frontend.glossary`) with its one-line explanation on hover and focus."""
    return format_html('<abbr class="term" title="{}" tabindex="0">{}</abbr>', GLOSSARY[name], shown or name)


_TERMS = re.compile(r"\b(" + "|".join(map(re.escape, GLOSSARY)) + r")\b")


@register.filter
def explain_terms(text: Any) -> SafeString:
    """`text`, escaped, with each glossary term in it explained on hover (see `term`)."""
    escaped = str(conditional_escape(str(text or "")))
    return mark_safe(_TERMS.sub(lambda m: term(m.group(1)), escaped))  # noqa: S308  (escaped above)


@register.filter
def audit_value(value: Any) -> str:
    """An audit detail value in words: yes / no for booleans, none for empty."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or value == "":
        return "none"
    return str(value)


@register.filter
def without_scheme(url: str) -> str:
    """`https://api.github.com/x` -> `api.github.com/x`: an address to read, not a link to follow."""
    return str(url or "").split("://", 1)[-1]
