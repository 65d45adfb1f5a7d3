"""Forward verification of the propagation path on constructed incidents: the metrics tool's hop
observations (`rca.tools.metrics.seeding`) and the conclusion's hop check (`rca.investigation.conclusion`)."""

from __future__ import annotations

from rca.core.path_verification import Check, Rule
from rca.investigation.conclusion import check_hop
from rca.investigation.document import document_of
from rca.investigation.engine import EngineConfig, investigate, windows
from rca.tools.base import ToolContext
from rca.tools.facts import RunFacts
from rca.tools.metrics.seeding import observe
from rca.tools.registry import ALL_TOOLS, record_facts, usable
from tests.unit.investigation.scenario import ONSET, STEP, build, propagate_latency

CHAIN = [("frontend", "checkout"), ("checkout", "payment"), ("frontend", "catalog")]


def _context(source, alert) -> ToolContext:  # type: ignore[no-untyped-def]
    incident, baseline = windows(source, alert.fired_at, EngineConfig())
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
