"""Small display filters for the pages (labels, numbers), so templates stay free of logic."""

from __future__ import annotations

from typing import Any

from django import template

from frontend.presenters import TIER_LABELS

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
