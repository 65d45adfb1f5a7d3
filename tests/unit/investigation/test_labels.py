"""How a visit labels an entity, and how labels and seed scores rank the candidates."""

from __future__ import annotations

from rca.core.evidence import Evidence, Source, Verdict
from rca.core.gate import GateBudget, control
from rca.core.hypotheses import HypothesisTree
from rca.core.modes import Mode
from rca.investigation.conclusion import rank_candidates
from rca.investigation.controller import LoopOutcome, _label
from rca.investigation.engine import EngineConfig, windows
from rca.investigation.result import Belief
from rca.investigation.seed import Suspect, seed
from rca.tools.base import Capture, ToolContext, ToolResult
from rca.tools.faults import FaultKind
from rca.tools.registry import SPECS
from tests.unit.investigation.scenario import build


def _capture(tool: str, verdict: Verdict, score: float | None) -> Capture:
    signals = {} if score is None else {"anomaly_score": score}
    result = ToolResult(summary=f"{tool}: constructed", signals=signals)
    return Capture(result, Evidence(tool, "h", f"{tool}: constructed", verdict, Source.METRICS, 0.0, signals))


def test_quiet_lanes_refuting_leave_an_entity_healthy() -> None:
    captures = [_capture("metrics", Verdict.REFUTES, 0.0), _capture("topology", Verdict.INCONCLUSIVE, None)]
    assert _label(captures) is Belief.HEALTHY


def test_a_lane_that_saw_it_move_keeps_it_open_despite_quiet_ones() -> None:
    captures = [
        _capture("metrics", Verdict.REFUTES, 0.0),
        _capture("logs", Verdict.INCONCLUSIVE, 0.7),  # moved, but the tool could not decide
        _capture("traces", Verdict.REFUTES, 0.0),
    ]
    assert _label(captures) is Belief.DEFERRED


def _loop(beliefs: dict[str, Belief]) -> LoopOutcome:
    """A finished loop that proved nothing and left `beliefs`."""
    tree = HypothesisTree.snapshot([], None)
    return LoopOutcome(
        tree=tree,
        control=control(tree, True, 1, 0.0, GateBudget(), Mode.ACTIVE),
        wants_to_finish=True,
        turns=1,
        elapsed_s=0.0,
        beliefs=beliefs,
        priority={},
    )


def test_an_entity_nothing_pointed_at_ranks_after_a_refuted_suspect() -> None:
    loop = _loop({"refuted": Belief.HEALTHY, "silent": Belief.DEFERRED})
    suspects = [Suspect("refuted", 2.0, FaultKind.ERRORS), Suspect("silent", 0.0, FaultKind.LATENCY)]
    ranked = [c.entity for c in rank_candidates(suspects, loop, None)]
    assert ranked == ["refuted", "silent"]


def test_an_entity_the_symptom_does_not_reach_ranks_after_one_it_does_within_a_belief() -> None:
    loop = _loop({"isolated": Belief.DEFERRED, "callee": Belief.DEFERRED, "refuted": Belief.HEALTHY})
    # `isolated` (a memory jump in a service nothing calls) seeds far higher than `callee`.
    suspects = [
        Suspect("isolated", 9.0, FaultKind.MEMORY),
        Suspect("callee", 1.0, FaultKind.ERRORS),
        Suspect("refuted", 5.0, FaultKind.CPU),
    ]
    assert [c.entity for c in rank_candidates(suspects, loop, None)] == ["isolated", "callee", "refuted"]
    reach = {"frontend", "callee", "refuted"}
    ranked = [c.entity for c in rank_candidates(suspects, loop, None, reach=reach)]
    assert ranked == ["callee", "isolated", "refuted"]  # the belief still comes first


def test_a_view_ranks_behind_the_component_it_may_stand_for() -> None:
    # `search_remote` records frontend's calls to the search endpoint and deviates a little more.
    edges = [("frontend", "search"), ("frontend", "search_remote")]
    faults = {("search", "latency_p90"): 3.0, ("search_remote", "latency_p90"): 3.2}
    source, alert = build(edges, faults, kinds={"search_remote": "remote"})
    incident, baseline = windows(source, alert, EngineConfig())
    ctx = ToolContext(source, alert, incident, baseline, source.topology())
    metrics = next(s.seeding for s in SPECS if s.name == "metrics")
    assert metrics is not None
    ranked = [s.entity for s in seed(ctx, {"metrics": metrics})]
    assert ranked.index("search") < ranked.index("search_remote")


def test_the_symptom_reaches_what_its_calls_reach() -> None:
    from rca.investigation.conclusion import symptom_reach
    from rca.tools.facts import RunFacts
    from tests.unit.tools import FakeSource

    edges = (("front", "order"), ("order", "pay"), ("user", "front"))
    graph = FakeSource(edges).topology()
    assert symptom_reach(RunFacts("front", 0.0, graph, frozenset())) == {"front", "order", "pay"}
    assert symptom_reach(RunFacts("ghost", 0.0, graph, frozenset())) is None
