"""Rollout modes shared by the verification gate and the confidence cap."""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """How a safety mechanism takes part in a run.

    Both modes compute and record the mechanism's result; only ``ACTIVE`` lets it govern.
    There is deliberately no "off": computing is pure and cheap, and a shadowed result is
    what an ablation compares against.
    """

    SHADOW = "shadow"
    ACTIVE = "active"

    @property
    def governs(self) -> bool:
        """True when the mechanism's result, not the legacy behaviour, decides."""
        return self is Mode.ACTIVE
