"""From where the loop stopped to a conclusion: candidates, frontier, propagation path, evidence
chain, grounding, capped confidence and action tier.

It reads what the tools recorded during the run (`rca.tools.facts.RunFacts`), never the telemetry.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import pairwise

import networkx as nx

from rca.core.actions import map_outcome
from rca.core.calibration import features, margin, supporting_lanes
from rca.core.gate import GateExit, GateState, calibrated_exit, evaluate
from rca.core.grounding import assemble_chain
from rca.core.hypotheses import Hypothesis, HypothesisState, HypothesisTree
from rca.core.levels import refined, root_of
from rca.core.modes import Mode
from rca.core.path_verification import HopVerification, verify_hop
from rca.investigation.controller import LoopOutcome, LoopSettings
from rca.investigation.policy import Policy
from rca.investigation.recovery import SEEDS_RECORDED, guidance_for
from rca.investigation.result import Belief, Candidate, Hop, InvestigationResult
from rca.investigation.seed import Suspect
from rca.tools.facts import RunFacts
from rca.tools.graph import call_paths

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


def symptom_reach(facts: RunFacts) -> frozenset[str] | None:
    """The alerting entity and every entity its calls reach (None when the graph does not know it)."""
    g, symptom = facts.digraph, facts.symptom
    if symptom not in g:
        return None
    return frozenset({symptom, *nx.descendants(g, symptom)})


def explanatory_frontier(facts: RunFacts, tree: HypothesisTree) -> tuple[str, ...]:
    """Validated origins that no other validated origin downstream of them explains."""
    origins = sorted({h.entity for h in tree.validated})
    g = facts.digraph
    return tuple(
        o
        for o in origins
        if not any(other != o and o in g and other in g and nx.has_path(g, o, other) for other in origins)
    )


def check_hop(facts: RunFacts, cause: str, effect: str) -> HopVerification:
    """The forward-verification rules for `cause -> effect` on what the tools observed of both ends:
    either direction of a call counts as the edge (a fault reaches callers through responses and
    callees through requests)."""
    graph = facts.graph
    edge = graph.has_edge(effect, cause) or graph.has_edge(cause, effect)
    return verify_hop(edge, facts.observe(cause), facts.observe(effect))


def _carriage(facts: RunFacts, chain: Sequence[str]) -> tuple[bool, int, float]:
    """How well a call chain (symptom first) carried its last entity's fault: whether it reaches that
    entity through the caller whose calls met its delay (traces), then how many of the entities
    between its two ends deviated from their baseline, and how far the least deviating of them did
    (a chain carries a fault only as strongly as its weakest link)."""
    between = [facts.observe(entity) for entity in chain[1:-1]]
    traced = len(chain) > 1 and facts.delayed_from.get(chain[-1]) == chain[-2]
    return (traced, sum(1 for o in between if o.deviates), min((o.z for o in between), default=0.0))


def propagation_path(facts: RunFacts, tree: HypothesisTree, root: str) -> tuple[Hop, ...]:
    """Hops from the root cause to the alerting symptom, each with the evidence about its two ends and
    its forward verification (kept when a rule fails, marked unverified with the rule)."""
    symptom = facts.symptom
    if root == symptom:
        return ()
    # Of equally short call chains, the fault travelled the one whose callers show it: its effect
    # reaches the callers it passes through; a caller on another chain did not wait on it, or
    # deviated less.
    calls = max(call_paths(facts.graph, symptom, root), key=lambda c: _carriage(facts, c), default=None)
    chain = list(reversed(calls)) if calls else [root, symptom]
    about: dict[str, list[str]] = {}
    for h in tree.hypotheses:
        about.setdefault(h.entity, []).extend(e.summary for e in h.evidence)
    hops = []
    for cause, effect in pairwise(chain):
        seen = tuple(about.get(cause, [])[:3] + about.get(effect, [])[:3])
        hops.append(Hop(cause, effect, calls is not None, seen, check_hop(facts, cause, effect)))
    return tuple(hops)


def conclude(
    facts: RunFacts,
    loop: LoopOutcome,
    suspects: Sequence[Suspect],
    settings: LoopSettings,
    policy: Policy,
    cap_mode: Mode,
) -> InvestigationResult:
    """Assemble the result of one investigation from where its loop stopped and what its tools recorded."""
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
    explained_by = facts.changes.explaining(facts.digraph, [s.entity for s in suspects])
    # The same service, named as deep as its levels' leaders reach (fault kind, detail).
    deepest = refined(tree, named, settings.levels) if named is not None else None
    candidates = rank_candidates(suspects, loop, deepest, explained_by, symptom_reach(facts))
    root = next((c for c in candidates if named is not None and c.entity == named.entity), None)
    score_of: Mapping[str, Suspect] = {s.entity: s for s in suspects}
    lead = margin([c.score for c in candidates]) if root is not None else 0.0
    path = propagation_path(facts, tree, root.entity) if root else ()
    route = [root.entity, *[h.effect for h in path]] if root else []
    chain = assemble_chain(
        tree,
        named_entity=root.entity if root else None,
        path=route,
        changes=facts.citations,
        onset=facts.onset,
        subscores=score_of[root.entity].subscores if root and root.entity in score_of else None,
    )
    confidence = policy.confidence(tree, named, lead)
    if policy.failure is not None and named is not None:
        # It failed closed while rating this conclusion: conclude again, now naming nothing.
        return conclude(facts, loop, suspects, settings, policy, cap_mode)
    if not settings.gate_mode.governs and named is not None and confidence == 0.0:
        confidence = round(0.5 + 0.4 * lead, 4)  # the legacy run trusts its own ranking
    validated = exit_ is GateExit.CONFIDENT
    scores = features(
        validated=validated,
        raw_confidence=confidence,
        candidate_scores=[c.score for c in candidates],
        supporting_lanes=supporting_lanes(tree.hypotheses, candidates[0].entity) if candidates else 0,
    )
    # The calibration is part of the gate: it governs only where the gate does.
    calibrated = calibrated_exit(
        exit_,
        settings.calibration if settings.gate_mode.governs else None,
        scores,
        settings.calibration_mode,
    )
    state, reason = loop.control.decision.state, loop.control.decision.reason
    if calibrated.exit is not exit_:  # validated, but runs scored like this one were too often wrong
        exit_, root, path, state = calibrated.exit, None, (), GateState.NO_CONFIDENT_ROOT_CAUSE
        reason = (
            f"{reason}; calibrated probability {calibrated.probability:.2f} below the confident "
            f"threshold {settings.calibration.threshold:.2f} (calibration.json)"
            if settings.calibration is not None
            else reason
        )
        chain = assemble_chain(tree, named_entity=None, path=[], changes=facts.citations, onset=facts.onset)
    outcome = map_outcome(exit_, confidence, chain.grounding, cap_mode)
    return InvestigationResult(
        policy=policy.name,
        symptom=facts.symptom,
        onset=facts.onset,
        gate=gate,
        gate_mode=settings.gate_mode,
        exit="confident" if exit_ is GateExit.CONFIDENT else "no_confident_root_cause",
        stop_reason=(
            f"the policy failed closed: {policy.failure}"
            if policy.failure is not None
            else reason
            if settings.gate_mode.governs
            else _legacy_reason(loop)
        ),
        turns=loop.turns,
        elapsed_s=loop.elapsed_s,
        hypotheses=tree.hypotheses,
        candidates=tuple(candidates),
        root_cause=root,
        frontier=explanatory_frontier(facts, tree),
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
            guidance_for(facts, tree, state, suspects, policy.failure is not None)
            if exit_ is GateExit.NO_CONFIDENT_ROOT_CAUSE
            else None
        ),
        facts=facts,
        validated=validated,
        calibration_scores=scores,
        calibrated_probability=calibrated.probability,
    )


def _best_guess(tree: HypothesisTree, priority: Mapping[str, float]) -> Hypothesis | None:
    live = [h for h in tree.hypotheses if h.state is not HypothesisState.INVALIDATED]
    return max(live, key=lambda h: (priority.get(h.id, 0.0), h.id), default=None)


def _legacy_reason(loop: LoopOutcome) -> str:
    if loop.wants_to_finish:
        return "shadow gate: the policy finished (legacy stop)"
    return f"shadow gate: turn limit reached after {loop.turns} turns (legacy stop)"
