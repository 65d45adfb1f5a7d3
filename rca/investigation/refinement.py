"""The hypotheses one level below a leader, and the tools that examine them.

Below a service that leads its level (`rca.core.levels`) come the fault kinds its telemetry makes
plausible: the kind it was examined as, each kind whose metric family moved at the entity itself, and
a bad deploy when a change reached it by onset. Below a kind that leads come the details the
telemetry names: the change of a bad deploy, otherwise the instances (pods) whose series of that kind
deviated most, or the entity's strongest series when it reports no instances. Kinds are examined
with the tools whose answer speaks to that kind alone; a detail with the one tool that can check it.
"""

from __future__ import annotations

import logging

from rca.core.hypotheses import Hypothesis
from rca.core.levels import Level, detail_parts
from rca.telemetry.model import TelemetryError
from rca.tools import metrics
from rca.tools.base import ToolContext
from rca.tools.changes import canary_profile
from rca.tools.faults import FAMILIES_OF_KIND, KIND_OF_FAMILY, FaultKind
from rca.tools.stats import KNEE

log = logging.getLogger(__name__)

MAX_CHILDREN = 4  # hypotheses opened below one leader: the level's breadth
# The tools whose answer speaks to that kind alone: a bad deploy is the change's canary; the other
# kinds are their own metric families and span attribution. (Logs and topology say the same for every
# kind; the canary of a bad deploy would support the kinds it caused too, and decide nothing between them.)
KIND_TOOLS = ("metrics", "traces")
DEPLOY_TOOLS = ("changes",)
# A detail names what it is about; the tool that checks it (`rca.tools.metrics`, `rca.tools.changes`).
DETAIL_TOOLS = {"instance": "metrics", "metric": "metrics", "change": "changes"}


def kind_children(ctx: ToolContext, parent: Hypothesis, tools: frozenset[str]) -> list[Hypothesis]:
    """The fault kinds below a service-level leader, the kind it was examined as first."""
    kinds = [k for k in FaultKind if k.value == parent.fault_kind]  # a proposal may name another
    try:
        if "metrics" in tools:
            moved = [
                (own, family)
                for family in metrics.profile(ctx, parent.entity).findings
                if (own := metrics.own_z(ctx, parent.entity, family)[0]) >= KNEE and family in KIND_OF_FAMILY
            ]
            kinds += [KIND_OF_FAMILY[f] for _, f in sorted(moved, key=lambda m: (-m[0], m[1].value))]
        if "changes" in tools and canary_profile(ctx, parent.entity) is not None:
            kinds.append(FaultKind.BAD_DEPLOY)
    except TelemetryError as exc:  # a backend down: refine on what is known
        log.warning("fault kinds of %s: %s", parent.entity, exc)
    unique = list(dict.fromkeys(kinds))[:MAX_CHILDREN]
    return [_child(parent, kind.value, "") for kind in unique]


def detail_children(ctx: ToolContext, parent: Hypothesis, tools: frozenset[str]) -> list[Hypothesis]:
    """The details below a fault-kind leader: its change, or the instances / series that moved most."""
    if parent.fault_kind not in set(FaultKind):
        return []
    kind = FaultKind(parent.fault_kind)
    details: list[str] = []
    try:
        if kind is FaultKind.BAD_DEPLOY and "changes" in tools:
            finding = canary_profile(ctx, parent.entity)
            if finding is not None and finding.rollout.reference:
                details.append(f"change:{finding.rollout.reference}")
        if "metrics" in tools:
            details += _moved_series(ctx, parent.entity, kind)
    except TelemetryError as exc:
        log.warning("details of %s: %s", parent.id, exc)
    return [_child(parent, parent.fault_kind, d) for d in list(dict.fromkeys(details))[:MAX_CHILDREN]]


def _moved_series(ctx: ToolContext, entity: str, kind: FaultKind) -> list[str]:
    """`instance:<name>` for the instances whose series of the kind deviated, strongest first; the
    entity-wide series as `metric:<name>` when no instance reports one."""
    prof = metrics.profile(ctx, entity)
    found = [f for family in FAMILIES_OF_KIND[kind] for f in prof.instances.get(family, {}).values()]
    found.sort(key=lambda f: (-f.deviation.z, f.instance or "", f.metric))
    named = [f"instance:{f.instance}" for f in found if f.instance is not None]
    if named:
        return named
    return [f"metric:{f.metric}" for f in found[:1]]


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


def tools_for(child: Hypothesis, tools: frozenset[str]) -> tuple[str, ...]:
    """The available tools that can examine `child`, in a stable order."""
    what, _ = detail_parts(child)
    if what in DETAIL_TOOLS:
        wanted: tuple[str, ...] = (DETAIL_TOOLS[what],)
    else:
        wanted = DEPLOY_TOOLS if child.fault_kind == FaultKind.BAD_DEPLOY.value else KIND_TOOLS
    return tuple(t for t in wanted if t in tools)
