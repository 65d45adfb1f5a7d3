"""Recall of similar past incidents as seeding priors: a nudge to the order, never evidence."""

from __future__ import annotations

from rca.core.evidence import Source
from rca.core.hypotheses import HypothesisState
from rca.investigation.engine import EngineConfig, investigate, windows
from rca.investigation.seed import seed
from rca.tools.base import ToolContext
from rca.tools.registry import ALL_TOOLS, seedings, usable
from tests.unit.investigation.scenario import build, propagate_latency

CHAIN = [("frontend", "checkout"), ("checkout", "payment"), ("payment", "db"), ("frontend", "catalog")]


def two_alike() -> dict[tuple[str, str], float]:
    faults = {("payment", "cpu"): 4.0, ("catalog", "cpu"): 4.0}
    faults.update(propagate_latency(["payment", "checkout", "frontend", "catalog"], 2.0))
    return faults


def _suspects(priors: dict[str, float] | None) -> dict[str, float]:
    source, alert = build(CHAIN, two_alike())
    incident, baseline = windows(source, alert, EngineConfig())
    ctx = ToolContext(source, alert, incident, baseline, source.topology())
    ranked = seed(ctx, seedings(usable(ALL_TOOLS, source.modalities())), priors)
    return {s.entity: s.score for s in ranked}


def test_a_prior_raises_a_deviating_suspect_and_cannot_lift_a_healthy_one() -> None:
    plain = _suspects(None)
    nudged = _suspects({"catalog": 1.0, "db": 1.0})
    assert nudged["catalog"] > plain["catalog"]
    assert nudged["catalog"] <= plain["catalog"] * 1.1 + 1e-9  # bounded: at most a tenth more
    assert nudged["db"] == plain["db"]  # db does not deviate: nothing to raise
    assert nudged["payment"] == plain["payment"]


def test_recall_never_validates_anything() -> None:
    source, alert = build(CHAIN, two_alike())
    plain = investigate(source, alert)
    recalled = investigate(source, alert, priors={"catalog": 1.0, "payment": 1.0})
    assert recalled.exit == plain.exit == "no_confident_root_cause"
    assert not [h for h in recalled.hypotheses if h.state is HypothesisState.VALIDATED]
    sources = {e.source for h in recalled.hypotheses for e in h.evidence}
    assert Source.LLM_INFERRED not in sources  # no record comes from anything but a tool
    assert recalled.chain.evidence == plain.chain.evidence
