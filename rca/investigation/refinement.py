"""The hypotheses one level below a leader.

Below a service that leads its level (`rca.core.levels`) come the fault kinds its telemetry makes
plausible: the kind it was examined as, then the kinds each tool names (`ToolSpec.kinds`: a kind whose
metric family moved at the entity itself, a bad deploy when a change reached it). Below a kind that
leads come the details the tools name (`ToolSpec.details`: the change of a bad deploy, the instances
or series that deviated most). Each is examined with the tools that speak to it on its own
(`rca.tools.registry.examiners`).
"""

from __future__ import annotations

from rca.core.hypotheses import Hypothesis
from rca.core.levels import Level
from rca.tools.base import ToolContext
from rca.tools.faults import FaultKind
from rca.tools.registry import details_at, kinds_at

MAX_CHILDREN = 4  # hypotheses opened below one leader: the level's breadth


def kind_children(ctx: ToolContext, parent: Hypothesis, tools: frozenset[str]) -> list[Hypothesis]:
    """The fault kinds below a service-level leader, the kind it was examined as first."""
    kinds = [k for k in FaultKind if k.value == parent.fault_kind]  # a proposal may name another
    kinds += kinds_at(ctx, parent.entity, tools)
    unique = list(dict.fromkeys(kinds))[:MAX_CHILDREN]
    return [_child(parent, kind.value, "") for kind in unique]


def detail_children(ctx: ToolContext, parent: Hypothesis, tools: frozenset[str]) -> list[Hypothesis]:
    """The details below a fault-kind leader: what the tools name below its kind (its change, the
    instances or series that moved most)."""
    if parent.fault_kind not in set(FaultKind):
        return []
    details = details_at(ctx, parent.entity, FaultKind(parent.fault_kind), tools)
    return [_child(parent, parent.fault_kind, d) for d in list(dict.fromkeys(details))[:MAX_CHILDREN]]


def _child(parent: Hypothesis, kind: str, detail: str) -> Hypothesis:
    """A child on the parent's entity; it shares the parent's prior, so it never reorders services."""
    suffix = detail or kind
    return Hypothesis(
        id=f"{parent.id}/{suffix}",
        entity=parent.entity,
        fault_kind=kind,
        parent_id=parent.id,
        prior=parent.prior,
        detail=detail,
    )


def children_below(
    ctx: ToolContext, parent: Hypothesis, level: Level, tools: frozenset[str]
) -> list[Hypothesis]:
    """The hypotheses one level below `parent`, a leader at `level` (none below a detail)."""
    if level is Level.SERVICE:
        return kind_children(ctx, parent, tools)
    if level is Level.FAULT_KIND:
        return detail_children(ctx, parent, tools)
    return []
