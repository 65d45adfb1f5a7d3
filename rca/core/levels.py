"""Hypothesis levels (Graph of States): the service, then the fault kind, then the detail.

A hypothesis's level is its depth in the tree. A root claims a service is at fault (examined first as
the kind its seed pointed to), its children the kinds of fault that service may have, and theirs the
detail the evidence names (an instance, a metric, a change). The controller refines level by level:
it drills down below the leader of a level, the hypothesis that has hard supporting evidence and
leads the runner-up among its siblings by `drill_margin`; and it backtracks when new evidence leaves
an ancestor on its focus path below a sibling, pruning the subtree below that ancestor from the search
(it stays in the record, with the evidence that demoted it).

Siblings are ordered by their standing, counted from evidence alone: each hard supporting item
raises it, each refutation lowers it, a hypothesis whose examined children were all refuted loses
`emptied_penalty` (its refinement found nothing to stand on), and the seed prior only breaks ties
(it adds less than one item of evidence). No state is set here: states stay derived from evidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from rca.core.evidence import Verdict
from rca.core.hypotheses import Hypothesis, HypothesisState, HypothesisTree


class Level(IntEnum):
    """How deep a hypothesis sits in the tree."""

    SERVICE = 1
    FAULT_KIND = 2
    DETAIL = 3


@dataclass(frozen=True, slots=True)
class LevelSettings:
    """The refinement thresholds (standing is in units of one hard supporting item)."""

    drill_margin: float = 1.0  # the leader's standing over the runner-up's, needed to drill down
    support_weight: float = 1.0  # standing per hard supporting item
    refute_weight: float = 1.0  # standing lost per refutation
    emptied_penalty: float = 2.0  # standing lost when every examined child was refuted


DEFAULT_LEVELS = LevelSettings()


@dataclass(frozen=True, slots=True)
class Backtrack:
    """An ancestor on the focus path that a sibling now outstands, and what goes with it."""

    depth: int  # its index on the focus path: the path is cut back to what lies above it
    demoted: str
    overtaken_by: str
    pruned: tuple[str, ...]  # the ids below it, no longer searched


def detail_parts(hypothesis: Hypothesis) -> tuple[str, str]:
    """(what, name) of a detail such as ``instance:pod-1``; ("", "") when it names none."""
    what, _, name = hypothesis.detail.partition(":")
    return (what, name) if what and name else ("", "")


def parent_in(tree: HypothesisTree, hypothesis: Hypothesis) -> str | None:
    """The hypothesis's parent id when that parent is in the tree; None for a root (or an orphan)."""
    parent = hypothesis.parent_id
    return parent if parent is not None and tree.get(parent) is not None else None


def children(tree: HypothesisTree, parent_id: str | None) -> tuple[Hypothesis, ...]:
    """The hypotheses directly below `parent_id` (the roots when it is None), in tree order."""
    return tuple(h for h in tree.hypotheses if parent_in(tree, h) == parent_id)


def level_of(tree: HypothesisTree, hypothesis: Hypothesis) -> Level:
    """The hypothesis's depth, counted along parents present in the tree (at most `DETAIL`)."""
    depth, seen, parent = 1, {hypothesis.id}, hypothesis.parent_id
    while parent is not None and parent not in seen and (above := tree.get(parent)) is not None:
        depth, parent = depth + 1, above.parent_id
        seen.add(above.id)
    return Level(min(depth, Level.DETAIL))


def root_of(tree: HypothesisTree, hypothesis: Hypothesis) -> Hypothesis:
    """The service-level hypothesis above `hypothesis` (itself when it is a root)."""
    node, seen = hypothesis, {hypothesis.id}
    while (
        node.parent_id is not None
        and node.parent_id not in seen
        and (up := tree.get(node.parent_id)) is not None
    ):
        node = up
        seen.add(node.id)
    return node


def _prior_share(prior: float) -> float:
    """The prior squeezed into [0, 1): it orders equal evidence and never outweighs one item."""
    if not prior > 0:  # negative, zero or NaN
        return 0.0
    return 1.0 - 1.0 / (1.0 + prior) if math.isfinite(prior) else 1.0 - 1e-9


def standing(tree: HypothesisTree, hypothesis: Hypothesis, settings: LevelSettings = DEFAULT_LEVELS) -> float:
    """How well the evidence holds the hypothesis up against its siblings (see the module docstring)."""
    hard = sum(1 for e in hypothesis.evidence if e.validates)
    refuted = sum(1 for e in hypothesis.evidence if e.verdict is Verdict.REFUTES)
    value = settings.support_weight * hard - settings.refute_weight * refuted + _prior_share(hypothesis.prior)
    examined = [c for c in children(tree, hypothesis.id) if c.evidence]
    if examined and all(c.state is HypothesisState.INVALIDATED for c in examined):
        value -= settings.emptied_penalty
    return value


def ranked(
    tree: HypothesisTree, parent_id: str | None, settings: LevelSettings = DEFAULT_LEVELS
) -> list[tuple[float, Hypothesis]]:
    """The siblings below `parent_id` with their standing, best first (ties by id)."""
    scored = [(standing(tree, h, settings), h) for h in children(tree, parent_id)]
    return sorted(scored, key=lambda item: (-item[0], item[1].id))


def leader(
    tree: HypothesisTree, parent_id: str | None, settings: LevelSettings = DEFAULT_LEVELS
) -> Hypothesis | None:
    """The sibling below `parent_id` that has hard support and leads the runner-up by the margin."""
    siblings = ranked(tree, parent_id, settings)
    if not siblings:
        return None
    top_standing, top = siblings[0]
    runner_up = siblings[1][0] if len(siblings) > 1 else 0.0
    # The tolerance keeps "one item ahead" one item ahead when the priors' shares cancel in floating point.
    if not top.validating_evidence or top_standing - runner_up < settings.drill_margin - 1e-9:
        return None
    return top


def drill_target(
    tree: HypothesisTree, parent_id: str | None, settings: LevelSettings = DEFAULT_LEVELS
) -> Hypothesis | None:
    """The leader below `parent_id` when a level lies below it: the hypothesis to refine next."""
    top = leader(tree, parent_id, settings)
    if top is None or level_of(tree, top) >= Level.DETAIL:
        return None
    return top


def subtree(tree: HypothesisTree, hypothesis_id: str) -> tuple[str, ...]:
    """The ids of every hypothesis below `hypothesis_id` (not itself), sorted."""
    below: set[str] = set()
    frontier = [hypothesis_id]
    while frontier:
        for child in children(tree, frontier.pop()):
            if child.id not in below and child.id != hypothesis_id:
                below.add(child.id)
                frontier.append(child.id)
    return tuple(sorted(below))


def backtrack(
    tree: HypothesisTree, focus: Sequence[str], settings: LevelSettings = DEFAULT_LEVELS
) -> Backtrack | None:
    """The highest hypothesis on the focus path (root first) that a sibling now strictly outstands."""
    for depth, hypothesis_id in enumerate(focus):
        hypothesis = tree.get(hypothesis_id)
        if hypothesis is None:
            continue  # pruned or never added: nothing stands there to demote
        best_standing, best = ranked(tree, parent_in(tree, hypothesis), settings)[0]
        if best.id != hypothesis.id and best_standing > standing(tree, hypothesis, settings):
            return Backtrack(depth, hypothesis.id, best.id, subtree(tree, hypothesis.id))
    return None


def refined(tree: HypothesisTree, start: Hypothesis, settings: LevelSettings = DEFAULT_LEVELS) -> Hypothesis:
    """The deepest hypothesis reached from `start` by following each level's leader down."""
    node, seen = start, {start.id}
    while (below := leader(tree, node.id, settings)) is not None and below.id not in seen:
        node = below
        seen.add(node.id)
    return node
