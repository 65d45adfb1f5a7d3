"""The changes tool's hooks: its seeding scores and kind hints, the bad deploy and the change it names
when a leader is refined, and the change facts it leaves for the conclusion."""

from __future__ import annotations

from rca.tools.base import ToolContext
from rca.tools.changes.analysis import MOVED_Z
from rca.tools.changes.profile import canary_profile, change_facts, started_by_onset
from rca.tools.faults import FaultKind


def scores(ctx: ToolContext) -> dict[str, float]:
    """A z-like score (>= 0) per entity changed in the window: how much worse its new version is."""
    return change_facts(ctx).scores()


def kind_hint(ctx: ToolContext, entity: str) -> FaultKind | None:
    """BAD_DEPLOY when a change to `entity` is in the window and its new version moved or never served;
    else None."""
    finding = canary_profile(ctx, entity)
    if finding is not None and finding.never_served and started_by_onset(ctx, finding.rollout):
        return FaultKind.BAD_DEPLOY
    if finding is None or not finding.aligned or finding.z() < MOVED_Z:
        return None
    return FaultKind.BAD_DEPLOY


def kinds(ctx: ToolContext, entity: str) -> list[FaultKind]:
    """A bad deploy, when a change reached the entity in the window."""
    return [FaultKind.BAD_DEPLOY] if canary_profile(ctx, entity) is not None else []


def details(ctx: ToolContext, entity: str, kind: FaultKind) -> list[str]:
    """`change:<reference>` below a bad deploy: the change nearest to onset, when it names one."""
    if kind is not FaultKind.BAD_DEPLOY:
        return []
    finding = canary_profile(ctx, entity)
    return (
        [f"change:{finding.rollout.reference}"] if finding is not None and finding.rollout.reference else []
    )


def record(ctx: ToolContext) -> None:
    """Record the change facts and citations for the conclusion (already recorded when seeding ran)."""
    change_facts(ctx)
