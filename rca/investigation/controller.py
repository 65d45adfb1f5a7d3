"""The deterministic EoG-style controller: it owns the frontier, the beliefs and the budget.

Each turn the policy picks one hypothesis to examine; the controller runs the chosen tools through
the EvidenceCapturingTool decorator, labels the entity from what the evidence says (origin, symptom,
healthy, deferred) and propagates that belief to the neighbours with damping: a symptom passes
blame to the callees that explain it (adding hypotheses for them when they have none), an origin
explains its callers. The frontier starts with the first `seeds` suspects; when every hypothesis on
it has been examined and none is validated, the next suspects join while the budget lasts (a fault
whose telemetry seeding undervalued is still reached). At every turn boundary and when the policy
wants to finish, the core's gate decides whether the loop may stop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rca.core.calibration import CalibrationMap
from rca.core.evidence import EvidenceSink, Verdict
from rca.core.gate import GateBudget, LoopControl, control
from rca.core.hypotheses import Conclusion, Hypothesis, HypothesisTree
from rca.core.levels import DEFAULT_LEVELS, LevelSettings, backtrack, drill_target, level_of
from rca.core.modes import Mode
from rca.investigation.policy import LoopView, Policy
from rca.investigation.refinement import children_below
from rca.investigation.result import Belief, Step
from rca.investigation.seed import Suspect, hypothesis_for
from rca.tools.base import Capture, EvidenceCapturingTool, Tool, ToolContext
from rca.tools.registry import examiners

Progress = Callable[[int, str, int], None]  # turn, last tool, hypotheses so far


@dataclass(frozen=True)
class LoopSettings:
    """The loop's budget, modes and search breadth."""

    budget: GateBudget = field(default_factory=GateBudget)
    gate_mode: Mode = Mode.ACTIVE
    belief_propagation: bool = True
    seeds: int = 5  # suspects that get a hypothesis at a time (the next ones once these are settled)
    damping: float = 0.5  # share of a symptom's priority passed to the callees that explain it
    levels: LevelSettings = DEFAULT_LEVELS  # when to drill down a level and when to backtrack
    refine: bool = True  # refine leaders into fault kinds and details (Graph of States)
    calibration: CalibrationMap | None = None  # the confident exit's calibration (None: the gate alone)
    calibration_mode: Mode = Mode.ACTIVE  # active: the calibration withholds; shadow: it only reports


@dataclass
class LoopOutcome:
    """Where the loop ended."""

    tree: HypothesisTree
    control: LoopControl
    wants_to_finish: bool
    turns: int
    elapsed_s: float
    beliefs: dict[str, Belief]
    priority: dict[str, float]
    steps: list[Step] = field(default_factory=list)


def _label(captures: list[Capture]) -> Belief:
    """What the evidence of one visit says the entity is."""
    verdicts = [c.evidence.verdict for c in captures]
    if Verdict.SUPPORTS in verdicts:
        return Belief.ORIGIN
    if any(c.result.inherited for c in captures):
        return Belief.SYMPTOM  # it moved, but a callee shows the same
    # A tool that saw the entity move but could not decide (a score in its contested band) keeps it
    # open: one lane's fault (a code defect in the logs) may leave the other lanes quiet.
    moved = any(c.evidence.verdict is Verdict.INCONCLUSIVE and c.result.moved for c in captures)
    decisive = [v for v in verdicts if v is not Verdict.INCONCLUSIVE]
    if decisive and not moved and all(v is Verdict.REFUTES for v in decisive):
        return Belief.HEALTHY
    return Belief.DEFERRED


class Controller:
    """Runs the bounded loop for one investigation."""

    def __init__(
        self,
        ctx: ToolContext,
        policy: Policy,
        tools: Mapping[str, Tool],
        settings: LoopSettings,
        clock: Callable[[], float] = time.monotonic,
        progress: Progress | None = None,
    ) -> None:
        self.ctx = ctx
        self.policy = policy
        self.settings = settings
        self.clock = clock
        self.progress = progress
        self.sink = EvidenceSink()
        self.tools = {name: EvidenceCapturingTool(tool, self.sink) for name, tool in tools.items()}

    def run(self, suspects: list[Suspect]) -> LoopOutcome:
        """Investigate from the seeded suspects until the gate (or, in shadow, the legacy rule) stops."""
        by_entity = {s.entity: s for s in suspects}
        hypotheses: dict[str, Hypothesis] = {}
        priority: dict[str, float] = {}
        waiting = [s for s in suspects if s.score > 0]  # in seed order, not yet given a hypothesis

        def widen() -> bool:
            """Give the next `seeds` suspects without a hypothesis one; whether any was added."""
            taken = {h.entity for h in hypotheses.values()}
            batch = [s for s in waiting if s.entity not in taken][: self.settings.seeds]
            for suspect in batch:
                waiting.remove(suspect)
                h = hypothesis_for(suspect, len(hypotheses))
                hypotheses[h.id] = h
                priority[h.id] = suspect.score
            return bool(batch)

        widen()
        beliefs = dict.fromkeys(self.ctx.graph.names(), Belief.DEFERRED)
        visited: set[str] = set()
        focus: list[str] = []  # the hypotheses drilled into, service first
        closed: set[str] = set()  # demoted by a backtrack: never refined again
        steps: list[Step] = []
        turns, wants_to_finish, start = 0, False, self.clock()
        while True:
            tree = HypothesisTree.snapshot(hypotheses.values(), self.sink)
            ctl = control(
                tree,
                wants_to_finish,
                turns,
                self.clock() - start,
                self.settings.budget,
                self.settings.gate_mode,
            )
            if ctl.stop:
                break
            frontier = self._frontier(hypotheses, priority, visited)
            # Every examined suspect cleared or left open and budget left: the next suspects join.
            if not frontier and tree.conclusion is Conclusion.NO_CONFIDENT_ROOT_CAUSE and widen():
                frontier = self._frontier(hypotheses, priority, visited)
            view = LoopView(tree, frontier, frozenset(visited), dict(beliefs), tuple(self.tools), turns)
            action = self.policy.choose(view)
            if action is None:
                wants_to_finish = True
                continue
            hypothesis = action.hypothesis
            if hypothesis.id not in hypotheses:  # a policy's proposal joins the tree; its state stays derived
                hypotheses[hypothesis.id] = hypothesis
                priority[hypothesis.id] = hypothesis.prior
            captures = [self.tools[name](self.ctx, hypothesis) for name in action.tools if name in self.tools]
            visited.add(hypothesis.id)
            turns += 1
            belief = _label(captures)
            beliefs[hypothesis.entity] = belief
            if self.settings.belief_propagation:
                self._propagate(hypothesis, belief, hypotheses, priority, by_entity)
            steps.append(_step(turns, hypothesis, captures, belief, action.rationale))
            if self.settings.refine:
                steps += self._refine(turns, hypotheses, priority, visited, focus, closed, beliefs)
            if self.progress is not None:
                self.progress(turns, captures[-1].evidence.tool if captures else "", len(hypotheses))
        return LoopOutcome(tree, ctl, wants_to_finish, turns, self.clock() - start, beliefs, priority, steps)

    @staticmethod
    def _frontier(
        hypotheses: Mapping[str, Hypothesis], priority: Mapping[str, float], visited: set[str]
    ) -> list[tuple[float, Hypothesis]]:
        """The unvisited hypotheses, highest priority first."""
        return sorted(
            ((priority[i], h) for i, h in hypotheses.items() if i not in visited),
            key=lambda item: (-item[0], item[1].id),
        )

    def _refine(
        self,
        turn: int,
        hypotheses: dict[str, Hypothesis],
        priority: dict[str, float],
        visited: set[str],
        focus: list[str],
        closed: set[str],
        beliefs: Mapping[str, Belief],
    ) -> list[Step]:
        """Backtrack where new evidence demoted a hypothesis on the focus path, then drill down below
        each level's leader, examining the new hypotheses within this turn (`rca.core.levels`).

        A demoted hypothesis is closed: its subtree stays in the record with its evidence (which is what
        demoted it) and is never refined again. Each pass closes a hypothesis or opens a level below a
        new one, so the refinement ends."""
        steps: list[Step] = []
        available = frozenset(self.tools)
        while True:
            tree = HypothesisTree.snapshot(hypotheses.values(), self.sink)
            back = backtrack(tree, focus, self.settings.levels)
            if back is not None:
                closed.add(back.demoted)
                del focus[back.depth :]
                demoted = hypotheses[back.demoted]
                steps.append(
                    Step(
                        turn,
                        demoted.id,
                        demoted.entity,
                        (),
                        (),
                        beliefs.get(demoted.entity, Belief.DEFERRED),
                        f"backtrack: {back.demoted} fell below {back.overtaken_by}; its subtree of "
                        f"{len(back.pruned)} hypotheses is pruned from the search",
                    )
                )
                continue
            target = drill_target(tree, focus[-1] if focus else None, self.settings.levels)
            if target is None or target.id in focus or target.id in closed:
                return steps
            focus.append(target.id)
            below = children_below(self.ctx, target, level_of(tree, target), available)
            fresh = [c for c in below if c.id not in hypotheses]
            if not fresh:
                return steps
            for child in fresh:
                hypotheses[child.id] = child
                priority[child.id] = child.prior
                visited.add(child.id)  # examined here, never again from the frontier
                captures = [self.tools[name](self.ctx, child) for name in examiners(child, available)]
                steps.append(
                    _step(
                        turn,
                        child,
                        captures,
                        beliefs.get(child.entity, Belief.DEFERRED),
                        f"drill down below {target.id}",
                    )
                )

    def _propagate(
        self,
        hypothesis: Hypothesis,
        belief: Belief,
        hypotheses: dict[str, Hypothesis],
        priority: dict[str, float],
        by_entity: Mapping[str, Suspect],
    ) -> None:
        """Semantic belief propagation to the neighbours, damped."""
        damping = self.settings.damping
        mine = priority[hypothesis.id]
        if belief is Belief.SYMPTOM:
            for callee in self.ctx.graph.callees(hypothesis.entity):
                suspect = by_entity.get(callee)
                if suspect is None or suspect.score <= 0:
                    continue
                existing = [i for i, h in hypotheses.items() if h.entity == callee]
                if existing:
                    for i in existing:
                        priority[i] += damping * mine
                    continue
                h = hypothesis_for(suspect, len(hypotheses))
                hypotheses[h.id] = h
                priority[h.id] = suspect.score + damping * mine
        elif belief is Belief.ORIGIN:
            for caller in self.ctx.graph.callers(hypothesis.entity):
                for i, h in hypotheses.items():
                    if h.entity == caller:
                        priority[i] *= 1 - damping  # explained by this origin


def _step(turn: int, hypothesis: Hypothesis, captures: list[Capture], belief: Belief, rationale: str) -> Step:
    """The record of one examination."""
    return Step(
        turn,
        hypothesis.id,
        hypothesis.entity,
        tuple(c.evidence.tool for c in captures),
        tuple(c.evidence.verdict.value for c in captures),
        belief,
        rationale,
    )
