"""The traces tool: own (self) time, origin vs victim, fallbacks and the signals contract."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import Span, SpanStatus, TimeWindow
from rca.tools.counts import ReferenceKind
from rca.tools.faults import FaultKind
from rca.tools.traces.analysis import _site_shifts, self_times
from rca.tools.traces.profile import analyse, trace_profile
from rca.tools.traces.seeding import kind_hint
from rca.tools.traces.seeding import scores as entity_scores
from rca.tools.traces.tool import TracesTool
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
    out = self_times(frame).set_index("span_id")
    assert out.loc["p", "own"] == pytest.approx(10.0 - 3.0 - 2.0)
    assert out.loc["p", "children"] == 3
    assert not out.loc["p", "own_error"]  # its child erred first
    assert out.loc["b", "own_error"]
    assert out.loc["a", "caller"] == "x"


def test_callee_whose_own_time_rose_outranks_its_caller() -> None:
    ctx = context(_source())
    scores = entity_scores(ctx)
    front, back = trace_profile(ctx, "front"), trace_profile(ctx, "back")
    # Both services' total time rose by 50 ms; only the callee's own time did.
    assert back.own_p50_observed - back.own_p50_reference == pytest.approx(0.050, abs=1e-3)
    assert front.own_p50_observed == pytest.approx(front.own_p50_reference, abs=1e-3)
    assert scores["back"] > scores["front"]
    assert max(scores, key=lambda e: scores[e]) == "back"
    assert kind_hint(ctx, "back") is FaultKind.LATENCY
    assert kind_hint(ctx, "front") is None


def _call(
    spans: list[Span],
    tid: str,
    caller: tuple[str, str],
    callee: tuple[str, str],
    at: float,
    work: float,
    late: float,
) -> float:
    """A CLIENT span of the caller (service, span id of its own span it runs in) around the callee's
    (service, operation) SERVER span, 1 ms on the wire and `late` seconds more; when the call ended."""
    (service, inside), (target, op) = caller, callee
    client = f"{tid}-{service}-{target}"
    end = at + 0.001 + work + late
    spans.append(Span(tid, client, inside, service, "HTTP POST", at, end))
    spans.append(Span(tid, f"{tid}-{target}", client, target, op, at + 0.0005, at + 0.0005 + work))
    return end


def _network_delay_source(delay: float, on: str = "back") -> FakeSource:
    """gateway -> front -> back and front -> cache, each call an OpenTelemetry CLIENT span in the
    caller around the callee's SERVER span. After onset, what `on` sends is `delay` seconds late on
    its network: a call to it or from it lasts longer, no span of its own does."""
    rng = np.random.default_rng(5)
    spans: list[Span] = []
    for i in range(240):
        t = ONSET - 600.0 + i * 3.7
        late = delay if t >= ONSET else 0.0
        own = 0.005 * float(np.exp(0.2 * rng.standard_normal()))
        tid = f"t{i}"
        to_back = late if on in ("front", "back") else 0.0
        to_cache = late if on == "front" else 0.0
        # front serves gateway's call: 1 ms of its own, then calls cache and back in turn.
        front_work = 0.001 + 0.0011 + to_cache + 0.001 + own + to_back + 0.001
        to_front = late if on == "front" else 0.0
        end = _call(
            spans, tid, ("gateway", f"{tid}-root"), ("front", "GET /buy"), t + 0.001, front_work, to_front
        )
        spans.append(Span(tid, f"{tid}-root", None, "gateway", "GET /", t, end + 0.001))
        at = _call(spans, tid, ("front", f"{tid}-front"), ("cache", "GET key"), t + 0.0025, 0.0001, to_cache)
        _call(spans, tid, ("front", f"{tid}-front"), ("back", "POST /reserve"), at, own, to_back)
    return FakeSource((("gateway", "front"), ("front", "back"), ("front", "cache")), span_list=spans)


def test_a_delay_on_a_services_network_is_its_own_not_its_callers() -> None:
    """Network delay on back (a leaf): the gap between front's call and back's serving span widens by
    50 ms, and no span of back's measures it. front's only widened edge is the one to back, its edge
    from gateway is as before; back's every edge (its one incoming) widened: back is the origin."""
    ctx = context(_network_delay_source(0.050), entity="gateway")
    front, back = trace_profile(ctx, "front"), trace_profile(ctx, "back")
    assert back.own_p50_observed == pytest.approx(back.own_p50_reference, rel=0.3)  # its spans as before
    assert front.own_p50_observed == pytest.approx(front.own_p50_reference, rel=0.3)  # the gap is no own time
    assert back.own_shift > 2.0  # log(51 ms / 1 ms)
    assert back.link_shift == back.own_shift
    assert front.own_shift <= 0.1
    result = TracesTool().run(ctx, Hypothesis(id="h", entity="back", fault_kind="latency"))
    assert "(its network)" in result.summary
    assert result.measurements["link_shift"] > 2.0
    scores = entity_scores(ctx)
    assert max(scores, key=lambda e: scores[e]) == "back"
    assert kind_hint(ctx, "back") is FaultKind.LATENCY
    assert kind_hint(ctx, "front") is None


def test_a_leaf_whose_callers_network_is_late_is_no_origin() -> None:
    """Network delay on front: its edge from gateway and its edges to back and cache all widen. back
    and cache (leaves: an incoming side only) see their one edge widen, and front accounts for it."""
    ctx = context(_network_delay_source(0.050, on="front"), entity="gateway")
    front, back, cache = (trace_profile(ctx, e) for e in ("front", "back", "cache"))
    assert front.own_shift > 2.0
    assert back.own_shift <= 0.1
    assert cache.own_shift <= 0.1
    scores = entity_scores(ctx)
    assert max(scores, key=lambda e: scores[e]) == "front"


def test_tool_result_carries_only_the_anomaly_score() -> None:
    ctx = context(_source())
    result = TracesTool().run(ctx, Hypothesis(id="h", entity="back", fault_kind="latency"))
    assert set(result.signals) == {"anomaly_score"}
    assert result.signals["anomaly_score"] >= 0.8
    assert "own time" in result.summary
    healthy = TracesTool().run(ctx, Hypothesis(id="h2", entity="front", fault_kind="latency"))
    assert healthy.signals["anomaly_score"] <= 0.2


def test_empty_baseline_looks_back_for_an_earlier_recording() -> None:
    # The baseline window is empty, the records before the incident window are found by looking back.
    empty = TimeWindow(ONSET - 5_000.0, ONSET - 4_000.0)
    ctx = context(_source(), incident=TimeWindow(ONSET, ONSET + 300.0), baseline=empty)
    analysis = analyse(ctx)
    assert analysis.comparison.kind is ReferenceKind.PRE_ONSET
    assert analysis.comparison.reference is not None
    assert analysis.comparison.reference.end <= ONSET


def test_peer_only_comparison_never_supports() -> None:
    src = _source()
    src.span_list = [s for s in src.span_list if s.start >= ONSET]  # nothing before the onset at all
    empty = TimeWindow(ONSET - 5_000.0, ONSET - 4_000.0)
    ctx = context(src, incident=TimeWindow(ONSET, ONSET + 300.0), baseline=empty)
    analysis = analyse(ctx)
    assert analysis.comparison.kind is ReferenceKind.PEERS
    for entity in ("front", "back"):
        result = TracesTool().run(ctx, Hypothesis(id="h", entity=entity, fault_kind="latency"))
        assert "other services" in result.summary
        assert set(result.signals) == {"anomaly_score"}
        assert float(result.signals["anomaly_score"]) < 0.8


def test_no_spans_at_all() -> None:
    ctx = context(FakeSource(EDGES))
    assert all(v == 0.0 for v in entity_scores(ctx).values())
    result = TracesTool().run(ctx, Hypothesis(id="h", entity="back", fault_kind="latency"))
    assert "no spans" in result.summary
    assert not result.signals


def test_spans_without_outcomes_cannot_clear_an_errors_hypothesis() -> None:
    ctx = context(_source())
    assert not analyse(ctx).outcomes_recorded
    quiet = TracesTool().run(ctx, Hypothesis(id="h", entity="front", fault_kind="errors"))
    assert 0.2 < float(quiet.signals["anomaly_score"]) < 0.8  # unseen, not healthy
    assert "errors are unseen" in quiet.summary


def test_spans_with_outcomes_can_clear_an_errors_hypothesis() -> None:
    src = _source()
    src.span_list = [replace(s, status=SpanStatus.OK) for s in src.span_list]
    ctx = context(src)
    assert analyse(ctx).outcomes_recorded
    quiet = TracesTool().run(ctx, Hypothesis(id="h", entity="front", fault_kind="errors"))
    assert float(quiet.signals["anomaly_score"]) <= 0.2


def test_calm_spans_clear_a_cpu_fault_but_not_a_growing_heap() -> None:
    # A CPU hog's run-queue wait is own time; a leak shows there late if at all (garbage collection).
    ctx = context(_source())
    cpu = TracesTool().run(ctx, Hypothesis(id="c", entity="front", fault_kind="cpu"))
    assert float(cpu.signals["anomaly_score"]) <= 0.2
    memory = TracesTool().run(ctx, Hypothesis(id="m", entity="front", fault_kind="memory"))
    assert 0.2 < float(memory.signals["anomaly_score"]) < 0.8
    assert "calm spans do not clear it" in memory.summary


def test_own_time_is_recorded_as_a_fact_once_the_spans_are_analysed() -> None:
    ctx = context(_source())
    assert "back" not in ctx.record.own_time_z  # no analysis yet: the traces lane is not in use
    analyse(ctx)
    own = ctx.record.own_time_z
    assert own["back"] > 3.0
    assert own["front"] < 3.0
    assert "nobody" not in own


def _two_callers(slow: float) -> FakeSource:
    """front -> back on three requests in four; front -> mid -> back on the fourth. After onset `back`
    answers `mid`'s requests `slow` seconds later (a delay only that caller's requests meet); own times
    vary by about 20 % from request to request."""
    rng = np.random.default_rng(7)
    spans: list[Span] = []
    for i in range(240):
        t = ONSET - 600.0 + i * 3.7
        tid = f"t{i}"
        via_mid = i % 4 == 0
        own = 0.005 * float(np.exp(0.2 * rng.standard_normal()))
        back_dur = own + (slow if via_mid and t >= ONSET else 0.0)
        parent = f"{tid}-m" if via_mid else f"{tid}-f"
        start = t + 0.004
        if via_mid:
            spans.append(
                Span(tid, f"{tid}-m", f"{tid}-f", "mid", "GET /route", t + 0.002, start + back_dur + 0.002)
            )
        spans.append(Span(tid, f"{tid}-b", parent, "back", "POST /reserve", start, start + back_dur))
        spans.append(Span(tid, f"{tid}-f", None, "front", "GET /buy", t, start + back_dur + 0.010))
    return FakeSource((("front", "back"), ("front", "mid"), ("mid", "back")), span_list=spans)


def test_a_delay_on_one_callers_requests_names_the_callee_not_the_waiting_caller() -> None:
    """Only a quarter of `back`'s requests wait (too few to move its median own time); they are all of
    the requests from `mid`'s call site, whose own time rose. `mid` and `front` merely wait: their own
    time does not move, and they are victims."""
    ctx = context(_two_callers(0.3))
    back, mid = trace_profile(ctx, "back"), trace_profile(ctx, "mid")
    assert back.own_p50_observed == pytest.approx(back.own_p50_reference, rel=0.3)  # the median stays
    assert back.site is not None
    assert back.site.endswith("from mid GET /route")
    assert back.site_shift > 2.0  # log(0.305 / 0.005) less its uncertainty
    assert back.site_caller == "mid"
    assert mid.site_shift <= 0.0
    assert ctx.record.delayed_from == {"back": "mid"}  # the caller the delay came up through
    scores = entity_scores(ctx)
    assert max(scores, key=lambda e: scores[e]) == "back"
    assert kind_hint(ctx, "back") is FaultKind.LATENCY
    assert kind_hint(ctx, "mid") is None
    assert kind_hint(ctx, "front") is None
    result = TracesTool().run(ctx, Hypothesis(id="h", entity="back", fault_kind="latency"))
    assert result.signals["anomaly_score"] >= 0.8
    assert "from mid" in result.summary


def test_the_normal_scatter_of_a_few_requests_is_no_call_site_delay() -> None:
    """Three requests a period at one call site, own times scattered as the operation's are (about
    1.6-fold, one sigma): the site's median moves by chance, and its lower bound stays below zero;
    half a second more on a 5 ms operation clears it."""
    rng = np.random.default_rng(3)

    def part(n_site: int, shift: float) -> pd.DataFrame:
        own = 0.005 * np.exp(0.5 * rng.standard_normal(20 + n_site))
        own[:n_site] += shift
        return pd.DataFrame(
            {
                "entity": "x",
                "name": "op",
                "caller": ["y"] * n_site + ["z"] * 20,
                "site": ["call"] * n_site + ["other"] * 20,
                "own": own,
            }
        )

    for seed in range(20):
        rng = np.random.default_rng(seed)
        quiet = _site_shifts(part(3, 0.0), part(3, 0.0))
        assert quiet["x"][0] <= 0.0
    delayed = _site_shifts(part(3, 0.0), part(3, 0.5))
    assert delayed["x"][0] > 0.0
    assert delayed["x"][1] == "op from y call"


def test_a_drift_within_the_operations_normal_tail_is_no_call_site_delay() -> None:
    """A heavy-tailed operation (a database query) whose requests from one site all take three times
    as long after onset: significant for a median, yet within what the operation reached before onset
    (its largest own time), as two recordings of a query drift; half a second more is beyond it.
    With two hundred requests a site the x3 drift clears five standard errors of the median: only the
    operation's normal tail tells it from a delay."""
    rng = np.random.default_rng(11)

    def part(factor: float, added: float = 0.0) -> pd.DataFrame:
        own = 0.005 * np.exp(1.0 * rng.standard_normal(400))
        own[:200] = own[:200] * factor + added
        return pd.DataFrame(
            {
                "entity": "db",
                "name": "SELECT",
                "caller": "db",
                "site": ["find"] * 200 + ["scan"] * 200,
                "own": own,
            }
        )

    reference = part(1.0)
    drifted = _site_shifts(reference, part(3.0))
    assert drifted["db"][0] <= 0.0
    delayed = _site_shifts(reference, part(1.0, 0.5))
    assert delayed["db"][0] > 0.0
    assert delayed["db"][1] == "SELECT from db find"
