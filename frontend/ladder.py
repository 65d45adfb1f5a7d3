"""The action ladder drawn on the incident and action pages: notify < issue < patch < pull request,
with the confidence markers and the rungs the evidence allows."""

from __future__ import annotations

from dataclasses import dataclass

from frontend.labels import TIER_LABELS
from rca.core.actions import ISSUE_AT, PATCH_AT, PULL_REQUEST_AT, ActionTier
from rca.incidents.models import Investigation


@dataclass(frozen=True)
class Rung:
    """One rung of the action ladder, with where it starts on the 0..1 confidence scale."""

    tier: str
    label: str
    start: float
    end: float
    current: bool
    allowed: bool

    @property
    def x(self) -> str:
        """Left edge as an SVG percentage (attributes, not style: the CSP allows them)."""
        return f"{self.start * 100:.1f}%"

    @property
    def width(self) -> str:
        """Width as an SVG percentage."""
        return f"{(self.end - self.start) * 100:.1f}%"

    @property
    def mid(self) -> str:
        """Centre as an SVG percentage (for the label)."""
        return f"{(self.start + self.end) * 50:.1f}%"


@dataclass(frozen=True)
class Ladder:
    """The action ladder notify < issue (0.40) < patch (0.65) < pull request (0.85), with markers."""

    rungs: tuple[Rung, ...]
    raw: float | None
    capped: float | None
    tier: str
    ceiling: str

    @staticmethod
    def percent(value: float | None) -> str:
        """A confidence as an SVG x percentage, clamped to the bar."""
        return f"{min(max(value or 0.0, 0.0), 1.0) * 100:.1f}%"

    @property
    def raw_x(self) -> str:
        """Where the raw confidence sits."""
        return self.percent(self.raw)

    @property
    def capped_x(self) -> str:
        """Where the capped confidence sits."""
        return self.percent(self.capped)


def ladder(investigation: Investigation, ceiling: str = "") -> Ladder:
    """The ladder for an investigation: its tier highlighted, rungs above `ceiling` marked not allowed."""
    bounds = (
        (ActionTier.NOTIFY, 0.0, ISSUE_AT),
        (ActionTier.ISSUE, ISSUE_AT, PATCH_AT),
        (ActionTier.PATCH, PATCH_AT, PULL_REQUEST_AT),
        (ActionTier.PULL_REQUEST, PULL_REQUEST_AT, 1.0),
    )
    top = ActionTier(ceiling) if ceiling else None
    rungs = tuple(
        Rung(
            tier=t.value,
            label="PR" if t is ActionTier.PULL_REQUEST else TIER_LABELS[t.value],  # the narrowest rung
            start=start,
            end=end,
            current=t.value == investigation.tier,
            allowed=top is None or top.allows(t),
        )
        for t, start, end in bounds
    )
    return Ladder(
        rungs, investigation.raw_confidence, investigation.capped_confidence, investigation.tier, ceiling
    )
