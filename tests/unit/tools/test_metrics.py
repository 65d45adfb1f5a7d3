"""The metrics tool's data-quality rules: quantiles over too few requests, dead success rates, latency
that the entity's own spans do not show, and the lead a resource family needs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import Direction, FloatArray, MetricSeries, TimeWindow
from rca.tools.faults import FaultKind
from rca.tools.metrics.analysis import (
    callers_wait,
    dominance_for,
    never_succeeds,
    quantile_volume,
    requests_per_sample,
    stock_deviation,
    stock_movement,
    stuck_at_zero,
    too_few_for_quantile,
    waited_callee,
)
from rca.tools.metrics.profile import (
    metric_profile,
    own_z,
    peer_noise,
    runner_up,
    short_reference_z,
    silent,
    spans_disown,
)
from rca.tools.metrics.seeding import kind_hint
from rca.tools.metrics.seeding import scores as metric_scores
from rca.tools.metrics.tool import MetricsTool
from rca.tools.stats import (
    CONTESTED,
    DOMINANCE,
    KNEE,
    RATE_RELATIVE_FLOOR,
    UNREMARKABLE,
    Family,
    deviation,
    floor_for,
    ratio_floor,
    reference_floor,
    resolution_spread,
)
from rca.tools.traces.profile import analyse as analyse_traces
from tests.unit.tools import ONSET, FakeSource, context
from tests.unit.tools.test_traces import _source  # back's own time rises; front waits on it


def _series(name: str, unit: str, value: float, instance: str | None = None) -> MetricSeries:
    t = ONSET + 60.0 * np.arange(5)
    return MetricSeries("svc", name, unit, t, np.full(5, value), instance)


def test_requests_per_sample_scales_a_rate_by_the_sampling_interval() -> None:
    window = TimeWindow(ONSET, ONSET + 600.0)
    per_second = _series("requests", "ops/s", 0.5, "pod-a")
    per_sample = _series("requests", "count", 30.0)
    other = _series("latency_p99", "s", 0.2, "pod-a")
    volumes = requests_per_sample([per_second, per_sample, other], window)
    assert volumes == {"pod-a": 30.0, None: 30.0}
    assert requests_per_sample([per_second], TimeWindow(0.0, 10.0)) == {}


def test_a_quantile_needs_enough_requests_to_be_more_than_the_slowest_one() -> None:
    assert too_few_for_quantile("latency_p99", 36.0)  # p99 needs 100 requests
    assert not too_few_for_quantile("latency_p90", 36.0)  # p90 needs 10
    # A median's tail holds a request at two, but the share under it is a rate over as few requests.
    assert too_few_for_quantile("latency_p50", 3.0)
    assert not too_few_for_quantile("latency_p50", 5.0)
    assert too_few_for_quantile("latency_p999", 500.0)
    assert not too_few_for_quantile("latency_mean", 1.0)  # not a quantile
    assert not too_few_for_quantile("latency_p99", None)  # volume unknown: kept


def test_a_quantile_reported_at_more_samples_than_hold_a_request_has_an_unknown_volume() -> None:
    """A service serving 0.8 requests a second, sampled every second: a quantile over each second's
    requests would be missing at the 45 % of seconds with none (Poisson, e^-0.8). Reported every second,
    it is an exporter's sliding window over more requests than one second holds."""
    every_second = np.full(300, 0.004)
    assert quantile_volume(every_second, 0.8) is None
    assert not too_few_for_quantile("latency_p50", quantile_volume(every_second, 0.8))
    # where a second without requests has no value, the quantile is each second's own: too few
    own = np.where(np.arange(300) % 2 == 0, 0.004, np.nan)
    assert quantile_volume(own, 0.8) == 0.8
    assert too_few_for_quantile("latency_p50", quantile_volume(own, 0.8))
    # a request or more per sample: the volume is what the traffic says
    assert quantile_volume(every_second, 8.0) == 8.0
    assert quantile_volume(every_second, None) is None


def test_a_success_rate_of_zero_throughout_is_unmeasured() -> None:
    assert stuck_at_zero(np.array([0.0, np.nan]), np.array([0.0, 0.0]))
    assert not stuck_at_zero(np.array([0.0, 100.0]), np.array([0.0]))
    assert not stuck_at_zero(np.array([np.nan]))  # no data says nothing


def test_a_share_of_requests_failing_throughout_is_unmeasured() -> None:
    down, up = (Family.ERRORS, Direction.DOWN), (Family.ERRORS, Direction.UP)
    assert never_succeeds(down, "%", np.array([0.0, np.nan]), np.array([0.0]))  # success rate 0
    assert never_succeeds(up, "1", np.array([1.0, np.nan]), np.array([1.0]))  # failure share 1
    assert not never_succeeds(up, "1", np.array([1.0, 1.0]), np.array([0.9]))  # it moved
    assert not never_succeeds(up, "1/s", np.array([1.0]), np.array([1.0]))  # a count, not a share
    assert not never_succeeds((Family.LATENCY, Direction.UP), "1", np.array([1.0]), np.array([1.0]))


def test_a_peer_whose_failure_share_never_moves_from_total_is_no_quiet_peer() -> None:
    """The entity's failures rise; a peer reads every request failed throughout (a collector that does
    not measure success). Counted as a peer at z 0 it would make the rise stand out from a quiet
    background that nobody measured: the only measured failures leave no background to compare with."""

    class Shares(FakeSource):
        def metric_names(self, entity: str) -> list[str]:
            return ["error_ratio"]

        def metrics(self, entity: str, window: TimeWindow, names: object = None) -> list[MetricSeries]:
            t = np.arange(0.0, ONSET + 300.0, 60.0)
            v = np.where(t >= ONSET, 0.2, 0.0) if entity == "front" else np.ones(t.size)
            keep = (t >= window.start) & (t < window.end)
            return [MetricSeries(entity, "error_ratio", "1", t[keep], v[keep])]

    ctx = context(Shares((("front", "back"),)))
    assert Family.ERRORS not in metric_profile(ctx, "back").findings
    own = own_z(ctx, "front", Family.ERRORS)[0]
    assert own > KNEE
    assert peer_noise(ctx, Family.ERRORS) == pytest.approx(own)


def test_latency_its_own_spans_do_not_show_is_not_the_entitys_own() -> None:
    ctx = context(_source())
    assert spans_disown(ctx, "front", Family.LATENCY) is None  # traces not analysed
    analyse_traces(ctx)
    disowned = spans_disown(ctx, "front", Family.LATENCY)
    assert disowned is not None
    assert disowned[0] < 3.0
    assert disowned[1] == "own span time"
    assert spans_disown(ctx, "back", Family.LATENCY) is None  # its own time did rise
    assert spans_disown(ctx, "front", Family.CPU) is None  # spans do not measure CPU


def test_a_resource_family_needs_a_clearer_lead() -> None:
    assert dominance_for(Family.LATENCY) == DOMINANCE
    assert dominance_for(Family.CPU) > DOMINANCE


def test_an_entity_without_the_needed_series_is_unmeasured_not_healthy() -> None:
    ctx = context(_source())
    result = MetricsTool().run(ctx, Hypothesis(id="h", entity="back", fault_kind="errors"))
    assert "unmeasured" in result.summary
    assert not result.signals


def test_a_series_flat_at_zero_before_onset_ranks_as_a_large_move_not_an_infinite_one() -> None:
    """Two points of history at zero (no traffic yet), then a latency: the thin-reference lead is
    measured against the level after onset, not against a spread of nothing."""
    from tests.unit.tools import FakeSource

    class Metered(FakeSource):
        def metric_names(self, entity: str) -> list[str]:
            return ["latency_p90"]

        def metrics(self, entity: str, window: TimeWindow, names: object = None) -> list[MetricSeries]:
            t = ONSET + 60.0 * np.arange(-2, 5)
            v = np.where(t < ONSET, 0.0, 0.5)
            keep = (t >= window.start) & (t < window.end)
            return [MetricSeries(entity, "latency_p90", "s", t[keep], v[keep])] if keep.any() else []

    ctx = context(Metered((("front", "svc"),)), incident=TimeWindow(ONSET - 300.0, ONSET + 300.0))
    z = short_reference_z(ctx, "svc", Family.LATENCY)
    assert 3.0 < z < 1e3


def _latency_source(
    series: dict[str, dict[str, tuple[float, float, float]]],
    edges: tuple[tuple[str, str], ...] = (("front", "back"),),
) -> FakeSource:
    """A metered system (`front -> back` unless `edges` say otherwise): per entity and metric, (baseline
    level, baseline wobble, rise) of a 1-minute series over the baseline and the incident (the rise
    starting at onset)."""

    class Metered(FakeSource):
        def metric_names(self, entity: str) -> list[str]:
            return sorted(series.get(entity, {}))

        def metrics(self, entity: str, window: TimeWindow, names: object = None) -> list[MetricSeries]:
            t = np.arange(0.0, ONSET + 300.0, 60.0)
            wobble = np.where(np.arange(t.size) % 2 == 0, 1.0, -1.0)
            out = []
            for name, (level, spread, rise) in series.get(entity, {}).items():
                v = level + spread * wobble + np.where(t >= ONSET, rise, 0.0)
                keep = (t >= window.start) & (t < window.end)
                if keep.any():
                    out.append(MetricSeries(entity, name, "s", t[keep], v[keep], f"{entity}-pod"))
            return out

    return Metered(edges)


def test_calm_network_throughput_cannot_clear_a_latency_fault_a_calm_latency_can() -> None:
    """A delay need not change the bytes an entity moves: back measures only its network, which stays
    calm, so its metrics leave a latency fault open; measured flat, its own latency clears it."""
    hypothesis = Hypothesis(id="h", entity="back", fault_kind="latency")
    network_only = _latency_source(
        {"front": {"latency_p90": (0.01, 0.0005, 0.3)}, "back": {"network_rx_bytes": (1e3, 50.0, 0.0)}}
    )
    result = MetricsTool().run(context(network_only), hypothesis)
    assert UNREMARKABLE <= result.signals["anomaly_score"] < CONTESTED
    assert "calm network cannot clear a latency fault" in result.summary
    both = _latency_source(
        {
            "front": {"latency_p90": (0.01, 0.0005, 0.3)},
            "back": {"network_rx_bytes": (1e3, 50.0, 0.0), "latency_p90": (0.01, 0.0005, 0.0)},
        }
    )
    assert MetricsTool().run(context(both), hypothesis).signals["anomaly_score"] < UNREMARKABLE


def test_a_caller_that_waits_on_its_callee_is_a_victim_however_quiet_its_baseline() -> None:
    """Network delay, metrics alone: the callee's server latency rises by 0.3 s, the caller's by the
    same 0.3 s. In z-scores the quiet caller moves far more (its baseline barely wobbles), so netting
    z-scores would call the caller the origin; netting the rise in seconds calls it a victim."""
    source = _latency_source(
        {"front": {"latency_p90": (0.01, 0.0005, 0.3)}, "back": {"latency_p90": (0.05, 0.01, 0.3)}}
    )
    ctx = context(source)
    back_own, back_raw, _ = own_z(ctx, "back", Family.LATENCY)
    front_own, front_raw, culprit = own_z(ctx, "front", Family.LATENCY)
    assert front_raw > back_raw > 3.0  # the victim's z-score is the larger one
    assert back_own == back_raw  # no callee: all of it is its own
    assert front_own < 3.0
    assert culprit == "back"


def test_a_caller_whose_own_time_rose_beyond_its_wait_keeps_the_difference() -> None:
    """The origin side of the same physics: a caller slower by 0.5 s while its callee is slower by
    0.1 s keeps 0.4 s of its own."""
    source = _latency_source(
        {"front": {"latency_p90": (0.01, 0.001, 0.5)}, "back": {"latency_p90": (0.05, 0.01, 0.1)}}
    )
    own, _, _ = own_z(context(source), "front", Family.LATENCY)
    assert own > 3.0


def test_a_quiet_callees_small_rise_does_not_explain_a_far_larger_rise_of_its_caller() -> None:
    """The callee's z-score is larger (1 ms in a baseline that barely wobbles) but it rose 1 ms; the
    caller rose 1.9 s. A caller waits only what its callee adds in seconds: it keeps the rest."""
    source = _latency_source(
        {"front": {"latency_p50": (0.2, 0.1, 1.9)}, "back": {"latency_p50": (0.003, 0.00002, 0.001)}}
    )
    ctx = context(source)
    back_own = own_z(ctx, "back", Family.LATENCY)[0]
    front_own, front_raw, _ = own_z(ctx, "front", Family.LATENCY)
    assert back_own > front_raw > 3.0  # the callee's z-score is the larger one
    assert front_own > 0.99 * front_raw  # 1 ms of 1.9 s is all it inherits


def test_a_callee_called_several_times_per_request_accounts_for_several_times_its_rise() -> None:
    """back rose 0.05 s and front 0.3 s: six sequential calls to back per request make all of front's
    rise, within the ten calls assumed at most (`MAX_SEQUENTIAL_CALLS`), so front is waiting on it."""
    source = _latency_source(
        {"front": {"latency_p50": (0.2, 0.01, 0.3)}, "back": {"latency_p50": (0.01, 0.0005, 0.05)}}
    )
    own, raw, culprit = own_z(context(source), "front", Family.LATENCY)
    assert raw > 3.0
    assert own == 0.0
    assert culprit == "back"


def test_a_server_latency_matched_by_the_entitys_own_client_wait_is_waiting_not_its_own() -> None:
    """Metrics' self time: the caller's server latency and its client-side wait on callees both rise
    by 0.3 s while the callee it waits on reports no latency at all (unmeasured): still a victim."""
    waits = _latency_source(
        {"front": {"latency_p90": (0.01, 0.0005, 0.3), "client_latency_p90": (0.008, 0.0005, 0.3)}}
    )
    works = _latency_source(
        {"front": {"latency_p90": (0.01, 0.0005, 0.3), "client_latency_p90": (0.008, 0.0005, 0.0)}}
    )
    assert own_z(context(waits), "front", Family.LATENCY)[0] < 3.0
    assert own_z(context(works), "front", Family.LATENCY)[0] > 3.0


def _wait(caller: str, callee: str) -> str:
    return f"client_latency_p50{{caller={caller},callee={callee}}}"


# front calls mid and back, mid calls back and other; the callers measure each call edge's wait.
_EDGES = (("front", "mid"), ("front", "back"), ("mid", "back"), ("mid", "other"))


def test_a_delay_on_the_callees_network_shows_only_in_what_all_its_callers_wait() -> None:
    """Network delay, metrics alone: back's own server latency does not move (the delay sits on its
    network, outside its server-side measurement), yet both its callers wait 0.3 s longer on it. back is
    the origin; mid, whose server latency rose by what it waits on back, is a victim."""
    source = _latency_source(
        {
            "front": {
                _wait("front", "mid"): (0.01, 0.0005, 0.3),
                _wait("front", "back"): (0.01, 0.0005, 0.3),
            },
            "mid": {
                "latency_p90": (0.02, 0.001, 0.3),
                _wait("mid", "back"): (0.01, 0.0005, 0.3),
                _wait("mid", "other"): (0.01, 0.0005, 0.0),
            },
            "back": {"latency_p90": (0.01, 0.0005, 0.0)},
            "other": {"latency_p90": (0.01, 0.0005, 0.0)},
        },
        _EDGES,
    )
    ctx = context(source)
    assert own_z(ctx, "back", Family.LATENCY)[0] > 3.0
    mid_own, mid_raw, culprit = own_z(ctx, "mid", Family.LATENCY)
    assert mid_raw > 3.0
    assert mid_own < 3.0
    assert culprit == "back"
    assert own_z(ctx, "other", Family.LATENCY)[0] < 3.0  # mid's other callee: nobody waits on it


def test_a_caller_that_waits_on_every_callee_alike_is_waiting_on_its_own_side() -> None:
    """mid waits 0.3 s longer on both its callees (its own network or CPU) and front does not wait on
    back at all: neither callee is delayed."""
    source = _latency_source(
        {
            "front": {
                _wait("front", "mid"): (0.01, 0.0005, 0.3),
                _wait("front", "back"): (0.01, 0.0005, 0.0),
            },
            "mid": {_wait("mid", "back"): (0.01, 0.0005, 0.3), _wait("mid", "other"): (0.01, 0.0005, 0.3)},
            "back": {"latency_p90": (0.01, 0.0005, 0.0)},
            "other": {"latency_p90": (0.01, 0.0005, 0.0)},
        },
        _EDGES,
    )
    ctx = context(source)
    assert own_z(ctx, "back", Family.LATENCY)[0] < 3.0
    assert own_z(ctx, "other", Family.LATENCY)[0] < 3.0
    assert own_z(ctx, "mid", Family.LATENCY)[0] > 3.0  # what front waits on mid is mid's


def test_the_callers_wait_is_the_least_any_caller_waits_beyond_its_other_callees() -> None:
    """The pure rule: one caller that waits longer on a callee while another caller of it does not is
    no delay of the callee's; a wait common to all of a caller's callees is the caller's own."""
    up = deviation(np.zeros(10) + 0.01, np.array([0.4]), Direction.UP)
    flat = deviation(np.zeros(10) + 0.01, np.array([0.01]), Direction.UP)
    assert up is not None
    assert flat is not None
    assert callers_wait({"a": {"x": up}, "b": {"x": up, "y": flat}}, "x") == ("a", up)
    one_waits = callers_wait({"a": {"x": up}, "b": {"x": flat}}, "x")
    assert one_waits is not None
    assert one_waits[1].z <= 0.0
    all_alike = callers_wait({"a": {"x": up, "y": up}}, "x")
    assert all_alike is not None
    assert all_alike[1].z == 0.0
    assert callers_wait({"a": {"y": up}}, "x") is None
    # A late network on the caller adds the same 0.4 s to every call: a callee whose baseline barely
    # wobbles turns it into far more sigmas than a noisy one, and it is still the caller's wait.
    quiet = deviation(0.003 + 1e-5 * np.sin(np.arange(10)), np.array([0.403]), Direction.UP)
    noisy = deviation(0.05 + 0.02 * np.sin(np.arange(10)), np.array([0.45]), Direction.UP)
    assert quiet is not None
    assert noisy is not None
    assert quiet.z > 10 * noisy.z
    late = callers_wait({"a": {"x": quiet, "y": noisy}}, "x")
    assert late is not None
    assert late[1].z < 1.0
    assert waited_callee("client_latency_p50{caller=a,callee=x}", "a") == "x"
    assert waited_callee("client_latency_p50{caller=b,callee=x}", "a") is None  # another caller's
    assert waited_callee("latency_p50{caller=a,callee=x}", "a") is None  # the callee's own side
    assert waited_callee("client_success_rate{caller=a,callee=x}", "a") is None  # not a latency


def test_a_latency_none_of_its_callers_waits_on_cannot_prove_it_the_origin() -> None:
    """back's server latency rises 0.3 s: when front measures its calls to back and waits no longer on
    them, the rise does not reach the callers and the metrics cannot prove back the origin; when front
    waits 0.3 s longer, they can."""
    hypothesis = Hypothesis(id="h", entity="back", fault_kind="latency")
    quiet = ("o1", "o2", "o3")  # front's other callees, at peace: the incident's noise floor
    callees = ("back", *quiet)
    scores = []
    for waited in (0.0, 0.3):
        source = _latency_source(
            {
                "front": {_wait("front", c): (0.01, 0.0005, waited if c == "back" else 0.0) for c in callees},
                "back": {"latency_p90": (0.01, 0.0005, 0.3)},
                **{c: {"latency_p90": (0.01, 0.0005, 0.0)} for c in quiet},
            },
            tuple(("front", c) for c in callees),
        )
        result = MetricsTool().run(context(source), hypothesis)
        scores.append(result.signals["anomaly_score"])
    assert scores[0] <= CONTESTED < scores[1]


def test_a_slower_tail_of_a_callee_does_not_account_for_its_callers_median() -> None:
    """front's median rises 0.13 s; back's rises 0.25 s, in its p99 (a noisy tail, about 4 sigma). A slower
    tail of back's calls reaches front's tail only, so front's median rise stays its own; had back's
    median risen as much, front would merely wait on it."""
    owns = []
    for back_metric in ("latency_p99", "latency_p50"):
        source = _latency_source(
            {"front": {"latency_p50": (0.16, 0.005, 0.13)}, "back": {back_metric: (0.41, 0.05, 0.25)}}
        )
        own, raw, _ = own_z(context(source), "front", Family.LATENCY)
        owns.append((own, raw))
    (tail_own, raw), (median_own, _) = owns
    assert raw > 10.0
    assert tail_own > raw - 5.0  # only back's z-score (about 4) is taken off
    assert median_own == 0.0


def test_a_callers_tail_is_netted_on_its_callees_tail_not_on_its_strongest_series() -> None:
    """An overloaded callee: back's p90 rises 1 s in a tight baseline (its strongest series by z), its
    p99 rises 2.4 s in a looser one; front's p99 rises 2.5 s. front's slowest requests wait on back's
    slowest calls, so back's p99 rise accounts for front's; netted on back's p90 alone, 1.5 s would
    stay front's own."""
    source = _latency_source(
        {
            "front": {"latency_p99": (0.4, 0.02, 2.5)},
            "back": {"latency_p90": (1.0, 0.01, 1.0), "latency_p99": (2.0, 0.1, 2.4)},
        }
    )
    ctx = context(source)
    back = metric_profile(ctx, "back").findings[Family.LATENCY]
    assert back.metric == "latency_p90"  # the strongest series is not the one front's tail waits on
    own, raw, culprit = own_z(ctx, "front", Family.LATENCY)
    assert raw > 50.0
    assert own < 0.1 * raw
    assert culprit == "back"


def test_a_latency_rise_far_smaller_than_the_symptoms_cannot_prove_it_the_origin() -> None:
    """front's latency rises 1 s (a noisy series: its own part, net of its wait on back, stays below
    back's in sigmas). back's rises 0.05 s, 100 sigma of its quiet baseline, and front waits that much
    longer on it: ten calls in sequence per request would still explain half a second at most, so the
    metrics cannot prove back the origin. A rise of 0.6 s can be what front suffers."""
    hypothesis = Hypothesis(id="h", entity="back", fault_kind="latency")
    quiet = ("o1", "o2", "o3")
    callees = ("back", *quiet)
    sources = [
        _latency_source(
            {
                "front": {
                    "latency_p90": (0.05, 0.05, 1.0),
                    **{_wait("front", c): (0.01, 0.0005, rise if c == "back" else 0.0) for c in callees},
                },
                "back": {"latency_p90": (0.01, 0.0005, rise)},
                **{c: {"latency_p90": (0.01, 0.0005, 0.0)} for c in quiet},
            },
            tuple(("front", c) for c in callees),
        )
        for rise in (0.05, 0.6)
    ]
    small, large = (MetricsTool().run(context(source), hypothesis) for source in sources)
    assert small.signals["anomaly_score"] <= CONTESTED < large.signals["anomaly_score"]
    assert "too little to account for it" in small.summary
    assert "too little" not in large.summary
    # An alert on another family says nothing of how long a request waits: the rule stays out of it.
    on_errors = context(sources[0])
    on_errors = replace(on_errors, alert=replace(on_errors.alert, metric="error_rate"))
    assert "too little" not in MetricsTool().run(on_errors, hypothesis).summary


def test_an_alert_naming_no_metric_is_judged_by_what_the_alerting_entity_shows() -> None:
    """The alert names no metric. When front's requests fail (its error rate far past the knee, its
    latency flat), back's slower calls explain the failures only in part and cannot prove back the
    origin; when front slows down instead, the same rise of back's latency can (latency is what an
    alert without a metric is taken to be about)."""
    hypothesis = Hypothesis(id="h", entity="back", fault_kind="latency")
    quiet = ("o1", "o2", "o3")
    results = []
    for errors, latency in ((0.2, 0.0), (0.0, 0.5)):
        source = _latency_source(
            {
                "front": {"latency_p90": (0.2, 0.01, latency), "error_rate": (0.01, 0.001, errors)},
                "back": {"latency_p90": (0.05, 0.005, 0.5)},
                **{c: {"latency_p90": (0.01, 0.0005, 0.0)} for c in quiet},
            },
            tuple(("front", c) for c in ("back", *quiet)),
        )
        results.append(MetricsTool().run(context(source), hypothesis))
    failing, slow = results
    assert "latency explains a errors alert only in part" in failing.summary
    assert failing.signals["anomaly_score"] <= CONTESTED < slow.signals["anomaly_score"]
    assert "only in part" not in slow.summary


def test_a_latency_none_of_its_callers_waits_on_does_not_seed_it_ahead_of_the_one_they_wait_on() -> None:
    """Seeding ranks by the same rule the proof applies: back's server latency rises 0.5 s but front, which
    measures its calls to it, waits no longer on back; front waits 0.3 s longer on cart, whose own
    latency rose 0.3 s. back's larger rise does not reach the symptom, so cart ranks first."""
    quiet = ("o1", "o2", "o3")
    callees = ("back", "cart", *quiet)
    source = _latency_source(
        {
            "front": {_wait("front", c): (0.01, 0.0005, 0.3 if c == "cart" else 0.0) for c in callees},
            "back": {"latency_p90": (0.01, 0.0005, 0.5)},
            "cart": {"latency_p90": (0.01, 0.0005, 0.3)},
            **{c: {"latency_p90": (0.01, 0.0005, 0.0)} for c in quiet},
        },
        tuple(("front", c) for c in callees),
    )
    ranked = metric_scores(context(source))
    assert ranked["back"] == 0.0
    assert ranked["cart"] > 3.0


def test_a_latency_rise_too_small_for_the_symptom_is_no_rival_and_seeds_nothing() -> None:
    """front's latency rises 0.3 s on a noisy baseline (15 sigma); mail's rises 1 ms on a quiet one (20
    sigma): ten sequential calls to it would add 10 ms, so it cannot account for front's rise. It neither
    ranks ahead of front nor stands as the rival that makes front's lead doubtful; a rise that can
    account for front's does both."""
    ranked, rivals = [], []
    for rise in (0.001, 0.3):
        source = _latency_source(
            {
                "front": {"latency_p90": (0.2, 0.02, 0.3)},
                "mail": {"latency_p90": (0.003, 0.00005, rise)},
                "other": {"latency_p90": (0.01, 0.001, 0.0)},
            },
            (("front", "mail"), ("front", "other")),
        )
        ctx = context(source)
        ranked.append(metric_scores(ctx)["mail"])
        rivals.append(runner_up(ctx, "other", Family.LATENCY)[1])
    assert ranked[0] == 0.0 < ranked[1]
    assert rivals == ["front", "mail"]


def test_a_request_counter_at_zero_throughout_leaves_the_volume_unknown() -> None:
    """Latency percentiles are measured, so requests were served: a counter that never left 0 does not
    count them, and must not drop the percentiles as resting on too few requests."""
    window = TimeWindow(ONSET, ONSET + 600.0)
    assert requests_per_sample([_series("requests", "ops/s", 0.0, "pod-a")], window) == {}


def _pods(stops: set[str]) -> FakeSource:
    """A metered `front -> back` system of one pod each (1-minute memory and CPU series); the pods in
    `stops` report nothing from onset on."""

    class Metered(FakeSource):
        def metric_names(self, entity: str) -> list[str]:
            return ["cpu", "memory"]

        def metrics(self, entity: str, window: TimeWindow, names: object = None) -> list[MetricSeries]:
            t = np.arange(0.0, ONSET + 300.0, 60.0)
            if entity in stops:
                t = t[t < ONSET]
            keep = (t >= window.start) & (t < window.end)
            wobble = np.where(np.arange(t.size) % 2 == 0, 1.0, -1.0)[keep]
            pod = f"{entity}-pod"
            return [
                MetricSeries(entity, "cpu", "%", t[keep], 20.0 + wobble, pod),
                MetricSeries(entity, "memory", "bytes", t[keep], 2e8 + 1e6 * wobble, pod),
            ]

    return Metered((("front", "back"),))


def test_a_pod_whose_telemetry_stops_at_onset_is_the_pod_failure_its_callers_are_not() -> None:
    ctx = context(_pods({"back"}), incident=TimeWindow(ONSET - 300.0, ONSET + 300.0))
    gone = silent(ctx, "back")
    assert gone is not None
    assert gone.deviation.z > 3.0
    assert silent(ctx, "front") is None  # it keeps reporting
    assert kind_hint(ctx, "back") is FaultKind.POD_FAILURE
    result = MetricsTool().run(ctx, Hypothesis(id="h", entity="back", fault_kind="pod_failure"))
    assert result.signals["anomaly_score"] > 0.6
    assert "stopped reporting" in result.summary


def test_telemetry_that_stops_everywhere_is_the_collector_not_a_pod() -> None:
    ctx = context(_pods({"front", "back"}), incident=TimeWindow(ONSET - 300.0, ONSET + 300.0))
    assert silent(ctx, "back") is None
    assert silent(ctx, "front") is None


def test_a_silence_shorter_than_three_missed_samples_says_nothing() -> None:
    ctx = context(_pods({"back"}), incident=TimeWindow(ONSET - 300.0, ONSET + 150.0))
    assert silent(ctx, "back") is None


def test_a_memory_leak_is_read_at_its_latest_level_a_level_shift_as_before() -> None:
    """Memory is a stock: a leak that grows through the last minutes of the window is highest at its
    end, where the window's quantile sees only part of it; a shift to a level held since onset reads
    the same either way."""
    baseline = 100.0 + np.tile([-1.0, 1.0], 20)
    leak = np.concatenate([np.full(10, 100.0), 100.0 + 4.0 * np.arange(1, 6)])  # grows 4 per sample
    shift = np.concatenate([np.full(5, 100.0), np.full(10, 120.0)])
    for window in (leak, shift):
        dev = deviation(baseline, window, Direction.UP)
        assert dev is not None
        read = stock_deviation(dev, baseline, window, Direction.UP)
        assert read.z >= dev.z
    leak_dev = deviation(baseline, leak, Direction.UP)
    assert leak_dev is not None
    assert (
        stock_deviation(leak_dev, baseline, leak, Direction.UP).observed == 116.0
    )  # median of 112, 116, 120
    shift_dev = deviation(baseline, shift, Direction.UP)
    assert shift_dev is not None
    assert stock_deviation(shift_dev, baseline, shift, Direction.UP) == shift_dev


def test_a_stock_counts_only_as_far_as_it_moved_within_the_window() -> None:
    """Against a separate recording, a level held flat through the window says nothing of the window; a
    leak that grows in it, or a stressor that allocates and frees, moves."""
    baseline = 100.0 + np.tile([-1.0, 1.0], 20)
    wobble = np.tile([-1.0, 1.0], 10)
    flat = 300.0 + wobble  # another recording's level, held throughout
    leak = 300.0 + 5.0 * np.arange(20)
    cycling = 300.0 + np.concatenate([np.zeros(8), np.full(6, 60.0), np.zeros(6)])
    for window, moved in ((flat, False), (leak, True), (cycling, True)):
        dev = deviation(baseline, window, Direction.UP)
        assert dev is not None
        assert dev.z > 50  # the level alone reads as a large rise
        counted = stock_movement(dev, window)
        assert (counted.z >= KNEE) is moved
        assert counted.z <= dev.z
        assert counted.baseline == dev.baseline
    short = deviation(baseline, flat[:2], Direction.UP)
    assert short is not None
    assert stock_movement(short, flat[:2]) == short  # too few samples to tell a level from a move


def _memory_levels(levels: dict[str, FloatArray]) -> FakeSource:
    """A `front -> back` system with 1-minute memory series: the baseline recording (before 300 s)
    at 1e8 with a wobble, the incident recording (from `ONSET`) at each entity's `levels`."""

    class Metered(FakeSource):
        def metric_names(self, entity: str) -> list[str]:
            return ["memory"]

        def metrics(self, entity: str, window: TimeWindow, names: object = None) -> list[MetricSeries]:
            base_t = np.arange(0.0, 300.0, 15.0)
            base_v = 1e8 + 1e5 * np.where(np.arange(base_t.size) % 2 == 0, 1.0, -1.0)
            t = np.concatenate([base_t, ONSET + 15.0 * np.arange(levels[entity].size)])
            v = np.concatenate([base_v, levels[entity]])
            keep = (t >= window.start) & (t < window.end)
            return [MetricSeries(entity, "memory", "bytes", t[keep], v[keep], f"{entity}-pod")]

    return Metered((("front", "back"),))


def test_against_a_separate_recording_a_flat_memory_level_is_not_a_deviation_growth_is() -> None:
    source = _memory_levels({"front": np.full(20, 3e8), "back": 1e8 + 1e7 * np.arange(20)})
    separate = context(source, incident=TimeWindow(ONSET, ONSET + 300.0), baseline=TimeWindow(0.0, 300.0))
    flat = metric_profile(separate, "front").findings.get(Family.MEMORY)
    assert flat is None or flat.deviation.z < KNEE
    grows = metric_profile(separate, "back").findings[Family.MEMORY]
    assert grows.deviation.z >= KNEE
    # A baseline that runs up to the window: a level above it is a rise within one recording.
    source = _memory_levels({"front": np.full(20, 3e8), "back": np.full(20, 1e8)})
    adjoining = context(source, incident=TimeWindow(ONSET, ONSET + 300.0), baseline=TimeWindow(0.0, ONSET))
    assert metric_profile(adjoining, "front").findings[Family.MEMORY].deviation.z >= KNEE


# The OpenTelemetry Collector's default span-metric buckets (ms) up to 1 s: coarse above 10 ms.
COLLECTOR_BOUNDS = np.array([2.0, 4.0, 6.0, 8.0, 10.0, 50.0, 100.0, 200.0, 400.0, 800.0, 1000.0])


def _histogram_p99(before: float, after: float, *, bucketed: bool = True) -> FakeSource:
    """A `front -> back` system whose p99 latencies are read from histogram buckets (ms, 15 s steps):
    front's quiet baseline lies inside the 10-50 ms bucket and its incident value stays in it; back's
    leaves its 10-50 ms bucket for `after`. `bucketed=False` drops the series' resolution."""

    class Bucketed(FakeSource):
        def metric_names(self, entity: str) -> list[str]:
            return ["span_latency_p99"]

        def metrics(self, entity: str, window: TimeWindow, names: object = None) -> list[MetricSeries]:
            t = np.arange(0.0, ONSET + 300.0, 15.0)
            wobble = np.where(np.arange(t.size) % 2 == 0, 0.1, -0.1)
            values = np.where(t < ONSET, before + wobble, after if entity == "back" else before + 18.0)
            keep = (t >= window.start) & (t < window.end)
            widths = COLLECTOR_BOUNDS - np.concatenate(([0.0], COLLECTOR_BOUNDS[:-1]))
            index = np.searchsorted(COLLECTOR_BOUNDS, values[keep])
            resolution = widths[index] if bucketed else None
            return [MetricSeries(entity, "span_latency_p99", "ms", t[keep], values[keep], None, resolution)]

    return Bucketed((("front", "back"),))


def test_a_quantile_that_stays_in_its_histogram_bucket_is_no_deviation_one_that_leaves_it_is() -> None:
    """A quantile read from coarse buckets is known to its bucket only: front's p99 moving from 20 to
    38 ms inside the 10-50 ms bucket scores a z of tens against its flat interpolated baseline, and is no
    evidence once the baseline's spread is floored at the bucket's width / sqrt(12); back's leaving it
    for the 200-400 ms bucket still is."""
    coarse = context(_histogram_p99(20.0, 300.0))
    front = metric_profile(coarse, "front").findings[Family.LATENCY].deviation
    back = metric_profile(coarse, "back").findings[Family.LATENCY].deviation
    assert front.z < KNEE < back.z
    assert back.spread == pytest.approx(40.0 / np.sqrt(12.0))
    exact = context(_histogram_p99(20.0, 300.0, bucketed=False))
    assert metric_profile(exact, "front").findings[Family.LATENCY].deviation.z > 10 * KNEE


def test_the_resolution_spread_is_the_baselines_median_bucket_width_over_sqrt_12() -> None:
    t = np.arange(4.0)
    series = MetricSeries("svc", "latency_p99", "s", t, np.array([0.02, 0.03, np.nan, 0.07]))
    assert resolution_spread(series) == 0.0  # measured values: no resolution
    widths = np.array([0.04, 0.04, 0.04, 0.05])
    spread = resolution_spread(MetricSeries("svc", "latency_p99", "s", t, series.values, None, widths))
    assert spread == pytest.approx(0.04 / np.sqrt(12.0))  # the NaN point's width does not count
    assert deviation(np.array([0.02, 0.021, 0.02]), np.array([0.045]), Direction.UP).z > KNEE
    assert deviation(np.array([0.02, 0.021, 0.02]), np.array([0.045]), Direction.UP, 0.02, spread).z < KNEE


def test_an_error_ratio_at_zero_scores_as_the_success_rate_it_complements() -> None:
    """1.6 % of requests failing after none did: read as a success rate (100 -> 98.4 %) its spread is
    floored at 0.2 % of the success level; read as a failure share (0 -> 0.016) a floor relative to 0 is
    none, and the z was millions. The failure share's floor is the same share of its complement."""
    t = np.arange(6.0)
    ratio = MetricSeries("svc", "error_ratio", "1", t, np.zeros(6))
    rate = MetricSeries("svc", "success_rate", "%", t, np.full(6, 100.0))
    assert ratio_floor(ratio) == pytest.approx(RATE_RELATIVE_FLOOR)
    assert ratio_floor(rate) == 0.0  # a success rate's floor is its own relative one
    assert ratio_floor(MetricSeries("svc", "error_count", "1/s", t, np.zeros(6))) == 0.0  # no share
    as_ratio = deviation(
        ratio.values, np.array([0.016]), Direction.UP, floor_for(Family.ERRORS), reference_floor(ratio)
    )
    as_rate = deviation(
        rate.values, np.array([98.4]), Direction.DOWN, floor_for(Family.ERRORS), reference_floor(rate)
    )
    assert as_ratio is not None
    assert as_rate is not None
    assert as_ratio.z == pytest.approx(as_rate.z) == pytest.approx(8.0)
    unfloored = deviation(ratio.values, np.array([0.016]), Direction.UP, floor_for(Family.ERRORS))
    assert unfloored is not None
    assert unfloored.z > 1e6


def _episodes_source(front_recovers: bool) -> FakeSource:
    """front calls back, other and two quiet services, 1-minute latency series from half an hour
    before onset. Nine to seven minutes before onset `other` was 0.5 s slower (an earlier incident)
    and front with it; from a minute before onset `back` is 0.05 s slower and front 0.3 s. front's
    latency came back to normal in between unless `front_recovers` is False."""
    t = np.arange(ONSET - 1800.0, ONSET + 300.0, 60.0)
    wobble = np.where(np.arange(t.size) % 2 == 0, 1.0, -1.0)
    earlier = (t >= ONSET - 540.0) & (t < ONSET - 360.0)
    current = t >= ONSET - 60.0
    between = (t >= ONSET - 360.0) & (t < ONSET - 60.0)
    front_rise = 0.5 * earlier + 0.3 * current + (0.0 if front_recovers else 0.4) * between
    levels = {
        "front": 0.2 + 0.01 * wobble + front_rise,
        "back": 0.01 + 0.0005 * wobble + 0.05 * current,
        "other": 0.01 + 0.0005 * wobble + 0.5 * earlier,
        "o1": 0.01 + 0.0005 * wobble,
        "o2": 0.01 - 0.0005 * wobble,
    }

    class Metered(FakeSource):
        def metric_names(self, entity: str) -> list[str]:
            return ["latency_p90"] if entity in levels else []

        def metrics(self, entity: str, window: TimeWindow, names: object = None) -> list[MetricSeries]:
            keep = (t >= window.start) & (t < window.end)
            if entity not in levels or not keep.any():
                return []
            return [MetricSeries(entity, "latency_p90", "s", t[keep], levels[entity][keep], f"{entity}-pod")]

    return Metered(tuple(("front", c) for c in ("back", "other", "o1", "o2")))


def test_an_earlier_incident_inside_the_window_the_system_recovered_from_is_no_rival() -> None:
    """Faults that follow each other closely put the previous one inside the next one's window.
    other's episode ended minutes before onset and front, the alerting entity, was calm again after
    it: it is set aside, and back's delay, which front suffers at onset, is uncontested. Had front
    never recovered in between, other's episode could be part of this incident and stays a rival."""
    window = TimeWindow(ONSET - 600.0, ONSET + 300.0)
    baseline = TimeWindow(ONSET - 1800.0, ONSET - 600.0)
    hypothesis = Hypothesis(id="h", entity="back", fault_kind="latency")
    results = []
    for recovers in (True, False):
        ctx = context(_episodes_source(recovers), incident=window, baseline=baseline)
        other = metric_profile(ctx, "other").findings[Family.LATENCY].deviation.z
        results.append((other, runner_up(ctx, "back", Family.LATENCY)[1], MetricsTool().run(ctx, hypothesis)))
    (other_set_aside, rival, proven), (other_kept, rival_kept, contested) = results
    assert other_set_aside < KNEE < other_kept
    assert rival != "other"
    assert rival_kept == "other"
    assert contested.signals["anomaly_score"] <= CONTESTED < proven.signals["anomaly_score"]


def test_behind_an_availability_alert_a_failing_service_is_an_errors_suspect_whatever_its_latency() -> None:
    """back fails (its error rate 0.01 -> 0.05 on a quiet baseline, about 30 sigma) and slows down far
    more out of its baseline (0.01 -> 0.5 s, about 600 sigma: failing work and retries take time).
    Behind an alert on availability its own failures explain the alert in full and its latency only in
    part, so back is an errors suspect; behind a latency alert the same figures make it a latency one."""
    series = {
        "front": {"latency_p90": (0.2, 0.01, 0.5), "error_rate": (0.01, 0.001, 0.04)},
        "back": {"latency_p90": (0.01, 0.0005, 0.5), "error_rate": (0.01, 0.001, 0.04)},
        **{c: {"latency_p90": (0.01, 0.0005, 0.0)} for c in ("o1", "o2", "o3")},
    }
    source = _latency_source(series, tuple(("front", c) for c in ("back", "o1", "o2", "o3")))
    on_latency = context(source)
    on_availability = replace(on_latency, alert=replace(on_latency.alert, metric="error_rate"))
    assert kind_hint(on_availability, "back") is FaultKind.ERRORS
    assert kind_hint(on_latency, "back") is FaultKind.LATENCY
