"""Small builders shared by the core tests."""

from __future__ import annotations

from rca.core.evidence import Evidence, Source, Verdict
from rca.core.hypotheses import Hypothesis


def ev(
    verdict: Verdict = Verdict.SUPPORTS,
    source: Source = Source.METRICS,
    hypothesis_id: str = "h1",
    at: float = 1_700_000_000.0,
    summary: str = "error_rate 0.37 for checkout",
) -> Evidence:
    return Evidence("prometheus_query", hypothesis_id, summary, verdict, source, at)


def hyp(hid: str = "h1", *evidence: Evidence, entity: str = "checkout", prior: float = 0.0) -> Hypothesis:
    return Hypothesis(hid, entity, "error_spike", None, tuple(evidence), prior)
