"""Forward verification of the propagation path on constructed incidents: the metrics tool's hop
observations (`rca.tools.metrics.seeding`) and the conclusion's hop check (`rca.investigation.conclusion`)."""

from __future__ import annotations

from rca.core.hypotheses import HypothesisTree
from rca.core.path_verification import Check, Observation, Rule
from rca.investigation.conclusion import check_hop, propagation_path
from rca.investigation.document import document_of
from rca.investigation.engine import EngineConfig, investigate, windows
from rca.telemetry.topology import graph_from_edges
from rca.tools.base import ToolContext
from rca.tools.facts import RunFacts
from rca.tools.metrics.seeding import observe
from rca.tools.registry import ALL_TOOLS, record_facts, usable
from tests.unit.investigation.scenario import ONSET, STEP, build, propagate_latency

CHAIN = [("frontend", "checkout"), ("checkout", "payment"), ("frontend", "catalog")]


def _context(source, alert) -> ToolContext:  # type: ignore[no-untyped-def]
    incident, baseline = windows(source, alert, EngineConfig())
    return ToolContext(source, alert, incident, baseline, source.topology())


def _facts(ctx: ToolContext) -> RunFacts:
    available = ctx.source.modalities()
    return record_facts(ctx, usable(ALL_TOOLS, available), available)


def test_a_fault_that_travels_forward_in_time_is_verified_hop_by_hop() -> None:
    source, alert = build(CHAIN, propagate_latency(["payment", "checkout", "frontend"], 3.0))
    result = investigate(source, alert)
    assert [(h.cause, h.effect) for h in result.path] == [("payment", "checkout"), ("checkout", "frontend")]
    assert all(h.verification is not None and h.verification.verified for h in result.path)
    assert document_of(result).to_json()["path"][0]["verification"] == {
        "verified": True,
        "rules": {"structural": "pass", "statistical": "pass", "temporal": "pass"},
        "failed": [],
    }


def test_an_effect_that_starts_before_its_cause_fails_the_temporal_rule() -> None:
    faults = propagate_latency(["payment", "checkout"], 3.0)
    starts = {("payment", "latency_p90"): 63, ("checkout", "latency_p90"): 57}  # checkout 6 min early
    source, alert = build(CHAIN, faults, alert_entity="checkout", starts=starts)
    ctx = _context(source, alert)
    assert observe(ctx, "checkout").onset == ONSET - 3 * STEP
    hop = check_hop(_facts(ctx), "payment", "checkout")
    assert hop.temporal is Check.FAIL
    assert hop.failed() == (Rule.TEMPORAL,)


def test_a_healthy_end_or_a_missing_edge_fails_its_rule() -> None:
    source, alert = build(CHAIN, propagate_latency(["payment", "checkout", "frontend"], 3.0))
    ctx = _context(source, alert)
    facts = _facts(ctx)
    assert facts.observe("catalog").deviates is False
    assert check_hop(facts, "catalog", "frontend").statistical is Check.FAIL
    no_edge = check_hop(facts, "payment", "frontend")  # frontend does not call payment directly
    assert no_edge.structural is Check.FAIL
    assert observe(ctx, "nowhere").deviates is None  # no metrics at all: the rule can't be checked
    assert facts.observe("nowhere").deviates is None  # nothing recorded: unknown as well


def test_of_two_equally_short_chains_the_path_runs_through_the_caller_that_carried_the_fault() -> None:
    diamond = [("frontend", "cart"), ("frontend", "checkout"), ("cart", "db"), ("checkout", "db")]
    source, alert = build(diamond, propagate_latency(["db", "checkout", "frontend"], 3.0))
    result = investigate(source, alert)
    # cart sorts first, so a choice blind to the observations would route through it
    assert [(h.cause, h.effect) for h in result.path] == [("db", "checkout"), ("checkout", "frontend")]


def test_the_caller_whose_calls_met_the_delay_in_traces_names_the_chain() -> None:
    """Both middle services deviate, cart the further; the traces say db's delayed requests came from
    checkout, and that decides the chain."""
    graph = graph_from_edges(
        [
            ("frontend", "cart", 1.0),
            ("frontend", "checkout", 1.0),
            ("cart", "db", 1.0),
            ("checkout", "db", 1.0),
        ]
    )
    seen = {e: Observation(True, z=z) for e, z in (("frontend", 5.0), ("cart", 40.0), ("checkout", 8.0))}
    facts = RunFacts("frontend", 0.0, graph, frozenset(), observations=seen)
    chain = [(h.cause, h.effect) for h in propagation_path(facts, HypothesisTree(), "db")]
    assert chain == [("db", "cart"), ("cart", "frontend")]  # without traces: the stronger deviation
    traced = RunFacts("frontend", 0.0, graph, frozenset(), observations=seen, delayed_from={"db": "checkout"})
    chain = [(h.cause, h.effect) for h in propagation_path(traced, HypothesisTree(), "db")]
    assert chain == [("db", "checkout"), ("checkout", "frontend")]
