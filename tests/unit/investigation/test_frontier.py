"""The controller's frontier: suspects beyond the first batch join when every examined one is settled."""

from __future__ import annotations

from rca.core.evidence import Source
from rca.core.gate import GateBudget
from rca.core.hypotheses import Hypothesis
from rca.investigation.controller import Controller, LoopSettings
from rca.investigation.engine import EngineConfig, windows
from rca.investigation.policy import OfflinePolicy
from rca.investigation.seed import Suspect
from rca.tools.base import ToolContext
from rca.tools.faults import FaultKind
from tests.unit.investigation.scenario import ScriptedTool, build

CHAIN = [("frontend", "checkout"), ("checkout", "payment"), ("frontend", "catalog")]
SUSPECTS = [
    Suspect("catalog", 5.0, FaultKind.LATENCY),
    Suspect("checkout", 4.0, FaultKind.LATENCY),
    Suspect("payment", 1.0, FaultKind.ERRORS),
]


def _run(scores: dict[str, float], seeds: int, turns: int = 10) -> tuple[list[str], bool]:
    """(entities examined in order, whether the tree validated a root cause), with a metrics tool that
    answers `scores[entity]` for every hypothesis (0.5, inconclusive, for an entity not named)."""
    source, alert = build(CHAIN, {})
    incident, baseline = windows(source, alert, EngineConfig())
    ctx = ToolContext(source, alert, incident, baseline, source.topology())

    def metrics(h: Hypothesis) -> float | None:
        return scores.get(h.entity, 0.5)

    tools = {"metrics": ScriptedTool("metrics", Source.METRICS, metrics)}
    settings = LoopSettings(budget=GateBudget(max_turns=turns, wall_clock_s=60.0), seeds=seeds, refine=False)
    controller = Controller(ctx, OfflinePolicy(), tools, settings)
    outcome = controller.run(SUSPECTS)
    examined = [s.entity for s in outcome.steps]
    return examined, outcome.tree.root_cause is not None


def test_when_every_seeded_suspect_is_cleared_the_next_suspects_are_examined() -> None:
    examined, found = _run({"catalog": 0.0, "checkout": 0.0, "payment": 0.95}, seeds=2)
    assert examined == ["catalog", "checkout", "payment"]
    assert found


def test_a_validated_suspect_ends_the_search_before_the_next_batch() -> None:
    examined, found = _run({"catalog": 0.95, "checkout": 0.0, "payment": 0.95}, seeds=1)
    assert examined == ["catalog"]
    assert found


def test_the_turn_budget_still_bounds_the_widened_search() -> None:
    examined, found = _run({}, seeds=1)
    assert examined == ["catalog", "checkout", "payment"]  # every suspect once, then the loop ends
    assert not found
    examined, found = _run({"payment": 0.95}, seeds=1, turns=2)
    assert examined == ["catalog", "checkout"]
    assert not found
