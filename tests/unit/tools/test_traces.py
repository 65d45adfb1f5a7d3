"""The traces tool: own (self) time, origin vs victim, fallbacks and the signals contract."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import Span, SpanStatus, TimeWindow
from rca.tools import traces
from tests.unit.tools import ONSET, FakeSource, context

EDGES = (("front", "back"), ("front", "cache"), ("back", "db"), ("front", "auth"))


def _trace(i: int, t: float, slow: float) -> list[Span]:
    """front (10 ms own) -> back (5 ms own + `slow`) -> db (2 ms); front -> cache, auth (1 ms each)."""
    tid = f"t{i}"
    back_dur = 0.005 + slow + 0.002
    spans = [
        Span(tid, f"{tid}-f", None, "front", "GET /buy", t, t + 0.010 + back_dur + 0.002),
        Span(tid, f"{tid}-c", f"{tid}-f", "cache", "GET key", t + 0.001, t + 0.002),
        Span(tid, f"{tid}-a", f"{tid}-f", "auth", "POST /check", t + 0.002, t + 0.003),
        Span(tid, f"{tid}-b", f"{tid}-f", "back", "POST /reserve", t + 0.004, t + 0.004 + back_dur),
        Span(tid, f"{tid}-d", f"{tid}-b", "db", "SELECT seat", t + 0.005, t + 0.007),
    ]
    return spans


def _source(slow: float = 0.050) -> FakeSource:
    spans: list[Span] = []
    for i in range(240):
        t = ONSET - 600.0 + i * 3.7
        spans.extend(_trace(i, t, slow if t >= ONSET else 0.0))
    return FakeSource(EDGES, span_list=spans)


def test_self_time_subtracts_the_union_of_child_intervals() -> None:
    frame = pd.DataFrame(
        {
            "span_id": ["p", "a", "b", "c"],
            "parent": [None, "p", "p", "p"],
            "entity": ["x", "y", "y", "z"],
            "name": ["op"] * 4,
            "start": [0.0, 1.0, 2.0, 8.0],
            "end": [10.0, 3.0, 4.0, 12.0],  # a and b overlap; c runs past its parent
            "error": [False, False, True, False],
        }
    )
    out = traces.self_times(frame).set_index("span_id")
    assert out.loc["p", "own"] == pytest.approx(10.0 - 3.0 - 2.0)
    assert out.loc["p", "children"] == 3
    assert not out.loc["p", "own_error"]  # its child erred first
    assert out.loc["b", "own_error"]
    assert out.loc["a", "caller"] == "x"


def test_callee_whose_own_time_rose_outranks_its_caller() -> None:
    ctx = context(_source())
    scores = traces.entity_scores(ctx)
    front, back = traces.trace_profile(ctx, "front"), traces.trace_profile(ctx, "back")
    # Both services' total time rose by 50 ms; only the callee's own time did.
    assert back.own_p50_observed - back.own_p50_reference == pytest.approx(0.050, abs=1e-3)
    assert front.own_p50_observed == pytest.approx(front.own_p50_reference, abs=1e-3)
    assert scores["back"] > scores["front"]
    assert max(scores, key=lambda e: scores[e]) == "back"
    assert traces.kind_hint(ctx, "back") is traces.FaultKind.LATENCY
    assert traces.kind_hint(ctx, "front") is None


def test_tool_result_carries_only_the_anomaly_score() -> None:
    ctx = context(_source())
    result = traces.TracesTool().run(ctx, Hypothesis(id="h", entity="back", fault_kind="latency"))
    assert set(result.signals) == {"anomaly_score"}
    assert result.signals["anomaly_score"] >= 0.8
    assert "own time" in result.summary
    healthy = traces.TracesTool().run(ctx, Hypothesis(id="h2", entity="front", fault_kind="latency"))
    assert healthy.signals["anomaly_score"] <= 0.2


def test_empty_baseline_looks_back_for_an_earlier_recording() -> None:
    # The baseline window is empty, the records before the incident window are found by looking back.
    empty = TimeWindow(ONSET - 5_000.0, ONSET - 4_000.0)
    ctx = context(_source(), incident=TimeWindow(ONSET, ONSET + 300.0), baseline=empty)
    analysis = traces.analyse(ctx)
    assert analysis.comparison.mode is traces.Mode.PRE_ONSET
    assert analysis.comparison.reference is not None
    assert analysis.comparison.reference.end <= ONSET


def test_peer_only_comparison_never_supports() -> None:
    src = _source()
    src.span_list = [s for s in src.span_list if s.start >= ONSET]  # nothing before the onset at all
    empty = TimeWindow(ONSET - 5_000.0, ONSET - 4_000.0)
    ctx = context(src, incident=TimeWindow(ONSET, ONSET + 300.0), baseline=empty)
    analysis = traces.analyse(ctx)
    assert analysis.comparison.mode is traces.Mode.PEERS
    for entity in ("front", "back"):
        result = traces.TracesTool().run(ctx, Hypothesis(id="h", entity=entity, fault_kind="latency"))
        assert "other services" in result.summary
        assert set(result.signals) == {"anomaly_score"}
        assert float(result.signals["anomaly_score"]) < 0.8


def test_no_spans_at_all() -> None:
    ctx = context(FakeSource(EDGES))
    assert all(v == 0.0 for v in traces.entity_scores(ctx).values())
    result = traces.TracesTool().run(ctx, Hypothesis(id="h", entity="back", fault_kind="latency"))
    assert "no spans" in result.summary
    assert not result.signals


def test_spans_without_outcomes_cannot_clear_an_errors_hypothesis() -> None:
    ctx = context(_source())
    assert not traces.analyse(ctx).outcomes_recorded
    quiet = traces.TracesTool().run(ctx, Hypothesis(id="h", entity="front", fault_kind="errors"))
    assert 0.2 < float(quiet.signals["anomaly_score"]) < 0.8  # unseen, not healthy
    assert "errors are unseen" in quiet.summary


def test_spans_with_outcomes_can_clear_an_errors_hypothesis() -> None:
    src = _source()
    src.span_list = [replace(s, status=SpanStatus.OK) for s in src.span_list]
    ctx = context(src)
    assert traces.analyse(ctx).outcomes_recorded
    quiet = traces.TracesTool().run(ctx, Hypothesis(id="h", entity="front", fault_kind="errors"))
    assert float(quiet.signals["anomaly_score"]) <= 0.2


def test_own_latency_is_read_only_from_an_analysis_already_made() -> None:
    ctx = context(_source())
    assert traces.own_latency_z(ctx, "back") is None  # no analysis yet: the traces lane is not in use
    traces.analyse(ctx)
    back, front = traces.own_latency_z(ctx, "back"), traces.own_latency_z(ctx, "front")
    assert back is not None
    assert back > 3.0
    assert front is not None
    assert front < 3.0
    assert traces.own_latency_z(ctx, "nobody") is None
