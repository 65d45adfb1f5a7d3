"""From where the loop stopped to a conclusion: candidates, frontier, propagation path, evidence
chain, grounding, capped confidence and action tier."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import pairwise

import networkx as nx

from rca.core.actions import map_outcome
from rca.core.gate import GateExit, evaluate
from rca.core.grounding import Citation, assemble_chain
from rca.core.hypotheses import Hypothesis, HypothesisState, HypothesisTree
from rca.core.levels import refined, root_of
from rca.core.modes import Mode
from rca.investigation.controller import LoopOutcome, LoopSettings
from rca.investigation.guidance import SEEDS_RECORDED, guidance_for
from rca.investigation.path_checks import check_hop
from rca.investigation.policy import Policy
from rca.investigation.result import Belief, Candidate, Hop, InvestigationResult
from rca.investigation.seed import Suspect
from rca.tools.base import ToolContext
from rca.tools.changes import changed_by_onset
from rca.tools.changes import entity_scores as changes_scores
from rca.tools.metrics import changed_downstream
from rca.tools.topology import call_path

# Ranking order of beliefs after the loop: what the evidence showed outranks what was not examined.
_BELIEF_ORDER = {Belief.ORIGIN: 0, Belief.DEFERRED: 1, Belief.SYMPTOM: 2, Belief.HEALTHY: 3}


def rank_candidates(
    suspects: Sequence[Suspect],
    loop: LoopOutcome,
    named: Hypothesis | None,
    explained_by: Mapping[str, Sequence[str]] | None = None,
    reach: Collection[str] | None = None,
) -> list[Candidate]:
    """Every entity ranked: the named root cause, other origins, then by belief and seed score.

    `explained_by[e]` names changes that may explain `e`'s deviation (changed services below an
    unchanged `e`): within its belief, `e` ranks right after the best of them, since a change reaching
    it explains its symptoms at least as well as a fault of its own that nothing shows. `reach` holds
    the entities the symptom depends on (itself included): within its belief, an entity no call from
    the symptom reaches ranks after those it does, as its fault has no known way to the symptom.
    """
    states: dict[str, HypothesisState] = {}
    kinds: dict[str, str] = {}
    for h in loop.tree.hypotheses:
        kinds.setdefault(h.entity, h.fault_kind)
        if h.state is HypothesisState.VALIDATED or h.entity not in states:
            states[h.entity] = h.state
    if named is not None:
        kinds[named.entity] = named.fault_kind

    score_of = {s.entity: s.score for s in suspects}

    def key(s: Suspect) -> tuple[int, bool, int, bool, float, int, str]:
        first = 0 if named is not None and s.entity == named.entity else 1
        belief = loop.beliefs.get(s.entity, Belief.DEFERRED)
        order = _BELIEF_ORDER[belief]
        if states.get(s.entity) is HypothesisState.INVALIDATED:
            order = _BELIEF_ORDER[Belief.HEALTHY]
        score, behind = s.score, 0
        rivals = [score_of[c] for c in (explained_by or {}).get(s.entity, ()) if c in score_of]
        if rivals and max(rivals) <= score:
            score, behind = max(rivals), 1
        # An entity nothing pointed at ranks after every one that showed something, even one whose
        # visit refuted it: a refutation speaks to one hypothesis, an empty seed to none.
        apart = reach is not None and s.entity not in reach
        return (first, s.score <= 0, order, apart, -score, behind, s.entity)

    return [
        Candidate(
            s.entity,
            kinds.get(s.entity, s.fault_kind.value),
            round(s.score, 6),
            loop.beliefs.get(s.entity, Belief.DEFERRED),
            named.detail if named is not None and s.entity == named.entity else "",
        )
        for s in sorted(suspects, key=key)
    ]


def _explained_by_changes(ctx: ToolContext, suspects: Sequence[Suspect]) -> dict[str, list[str]]:
    """Per entity, the changed services below it whose change looks worse than its own (any change beats
    none; among changes, the higher changes score): its deviation may be theirs (see `rank_candidates`).
    A changed entity whose own change looks at least as bad competes with them on its seed score."""
    changed = changed_by_onset(ctx)
    if not changed:
        return {}
    scores = changes_scores(ctx)

    def weight(e: str) -> tuple[bool, float]:
        return (e in changed, scores.get(e, 0.0))

    return {
        s.entity: [d for d in changed_downstream(ctx, s.entity) if weight(d) > weight(s.entity)]
        for s in suspects
    }


def symptom_reach(ctx: ToolContext) -> frozenset[str] | None:
    """The alerting entity and every entity its calls reach (None when the graph does not know it)."""
    g, symptom = ctx.digraph, ctx.alert.entity
    if symptom not in g:
        return None
    return frozenset({symptom, *nx.descendants(g, symptom)})


def explanatory_frontier(ctx: ToolContext, tree: HypothesisTree) -> tuple[str, ...]:
    """Validated origins that no other validated origin downstream of them explains."""
    origins = sorted({h.entity for h in tree.validated})
    g = ctx.digraph
    return tuple(
        o
        for o in origins
        if not any(other != o and o in g and other in g and nx.has_path(g, o, other) for other in origins)
    )


def propagation_path(ctx: ToolContext, tree: HypothesisTree, root: str) -> tuple[Hop, ...]:
    """Hops from the root cause to the alerting symptom, each with the evidence about its two ends and
    its forward verification (kept when a rule fails, marked unverified with the rule)."""
    symptom = ctx.alert.entity
    if root == symptom:
        return ()
    calls = call_path(ctx.graph, symptom, root)
    chain = list(reversed(calls)) if calls else [root, symptom]
    about: dict[str, list[str]] = {}
    for h in tree.hypotheses:
        about.setdefault(h.entity, []).extend(e.summary for e in h.evidence)
    hops = []
    for cause, effect in pairwise(chain):
        seen = tuple(about.get(cause, [])[:3] + about.get(effect, [])[:3])
        hops.append(Hop(cause, effect, calls is not None, seen, check_hop(ctx, cause, effect)))
    return tuple(hops)


def conclude(
    ctx: ToolContext,
    loop: LoopOutcome,
    suspects: Sequence[Suspect],
    settings: LoopSettings,
    policy: Policy,
    citations: Sequence[Citation],
    cap_mode: Mode,
) -> InvestigationResult:
    """Assemble the result of one investigation."""
    tree = loop.tree
    gate = evaluate(tree, loop.wants_to_finish, loop.turns, loop.elapsed_s, settings.budget)
    named: Hypothesis | None
    if settings.gate_mode.governs:
        named = tree.root_cause
    else:
        # Shadow: the legacy behaviour names the policy's best guess, proven or not.
        named = tree.root_cause or _best_guess(tree, loop.priority)
    exit_ = GateExit.CONFIDENT if named is not None else GateExit.NO_CONFIDENT_ROOT_CAUSE
    if named is not None:  # the service-level claim: what the confidence is about
        named = root_of(tree, named)
    if policy.failure is not None:  # a policy that failed closed names nothing, whatever was proven
        named, exit_ = None, GateExit.NO_CONFIDENT_ROOT_CAUSE
    explained_by = _explained_by_changes(ctx, suspects)
    # The same service, named as deep as its levels' leaders reach (fault kind, detail).
    deepest = refined(tree, named, settings.levels) if named is not None else None
    candidates = rank_candidates(suspects, loop, deepest, explained_by, symptom_reach(ctx))
    root = next((c for c in candidates if named is not None and c.entity == named.entity), None)
    score_of: Mapping[str, Suspect] = {s.entity: s for s in suspects}
    margin = _margin(candidates) if root is not None else 0.0
    path = propagation_path(ctx, tree, root.entity) if root else ()
    route = [root.entity, *[h.effect for h in path]] if root else []
    chain = assemble_chain(
        tree,
        named_entity=root.entity if root else None,
        path=route,
        changes=citations,
        onset=ctx.onset,
        subscores=score_of[root.entity].subscores if root and root.entity in score_of else None,
    )
    confidence = policy.confidence(tree, named, margin)
    if policy.failure is not None and named is not None:
        # It failed closed while rating this conclusion: conclude again, now naming nothing.
        return conclude(ctx, loop, suspects, settings, policy, citations, cap_mode)
    if not settings.gate_mode.governs and named is not None and confidence == 0.0:
        confidence = round(0.5 + 0.4 * margin, 4)  # the legacy run trusts its own ranking
    outcome = map_outcome(exit_, confidence, chain.grounding, cap_mode)
    return InvestigationResult(
        policy=policy.name,
        symptom=ctx.alert.entity,
        onset=ctx.onset,
        gate=gate,
        gate_mode=settings.gate_mode,
        exit="confident" if exit_ is GateExit.CONFIDENT else "no_confident_root_cause",
        stop_reason=(
            f"the policy failed closed: {policy.failure}"
            if policy.failure is not None
            else loop.control.decision.reason
            if settings.gate_mode.governs
            else _legacy_reason(loop)
        ),
        turns=loop.turns,
        elapsed_s=loop.elapsed_s,
        hypotheses=tree.hypotheses,
        candidates=tuple(candidates),
        root_cause=root,
        frontier=explanatory_frontier(ctx, tree),
        path=path,
        chain=chain,
        outcome=outcome,
        beliefs=dict(loop.beliefs),
        steps=tuple(loop.steps),
        subscores={s.entity: dict(s.subscores) for s in suspects[:SEEDS_RECORDED]},
        tokens_in=policy.tokens_in,
        tokens_out=policy.tokens_out,
        cost_usd=policy.cost_usd,
        policy_failure=policy.failure,
        policy_notes=policy.notes,
        guidance=(
            guidance_for(ctx, tree, loop.control.decision.state, suspects, policy.failure is not None)
            if exit_ is GateExit.NO_CONFIDENT_ROOT_CAUSE
            else None
        ),
    )


def _best_guess(tree: HypothesisTree, priority: Mapping[str, float]) -> Hypothesis | None:
    live = [h for h in tree.hypotheses if h.state is not HypothesisState.INVALIDATED]
    return max(live, key=lambda h: (priority.get(h.id, 0.0), h.id), default=None)


def _margin(candidates: Sequence[Candidate]) -> float:
    """How far the first candidate leads the second, as a share of its score."""
    if len(candidates) < 2 or candidates[0].score <= 0:
        return 1.0 if candidates else 0.0
    return max(0.0, min(1.0, (candidates[0].score - candidates[1].score) / candidates[0].score))


def _legacy_reason(loop: LoopOutcome) -> str:
    if loop.wants_to_finish:
        return "shadow gate: the policy finished (legacy stop)"
    return f"shadow gate: turn limit reached after {loop.turns} turns (legacy stop)"
