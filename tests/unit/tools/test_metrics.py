"""The metrics tool's data-quality rules: quantiles over too few requests, dead success rates, latency
that the entity's own spans do not show, and the lead a resource family needs."""

from __future__ import annotations

import numpy as np

from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import MetricSeries, TimeWindow
from rca.tools import metrics, traces
from rca.tools.stats import DOMINANCE, Family
from tests.unit.tools import ONSET, context
from tests.unit.tools.test_traces import _source  # back's own time rises; front waits on it


def _series(name: str, unit: str, value: float, instance: str | None = None) -> MetricSeries:
    t = ONSET + 60.0 * np.arange(5)
    return MetricSeries("svc", name, unit, t, np.full(5, value), instance)


def test_requests_per_sample_scales_a_rate_by_the_sampling_interval() -> None:
    window = TimeWindow(ONSET, ONSET + 600.0)
    per_second = _series("requests", "ops/s", 0.5, "pod-a")
    per_sample = _series("requests", "count", 30.0)
    other = _series("latency_p99", "s", 0.2, "pod-a")
    volumes = metrics.requests_per_sample([per_second, per_sample, other], window)
    assert volumes == {"pod-a": 30.0, None: 30.0}
    assert metrics.requests_per_sample([per_second], TimeWindow(0.0, 10.0)) == {}


def test_a_quantile_needs_enough_requests_to_be_more_than_the_slowest_one() -> None:
    assert metrics.too_few_for_quantile("latency_p99", 36.0)  # p99 needs 100 requests
    assert not metrics.too_few_for_quantile("latency_p90", 36.0)  # p90 needs 10
    assert metrics.too_few_for_quantile("latency_p999", 500.0)
    assert not metrics.too_few_for_quantile("latency_mean", 1.0)  # not a quantile
    assert not metrics.too_few_for_quantile("latency_p99", None)  # volume unknown: kept


def test_a_success_rate_of_zero_throughout_is_unmeasured() -> None:
    assert metrics._stuck_at_zero(np.array([0.0, np.nan]), np.array([0.0, 0.0]))
    assert not metrics._stuck_at_zero(np.array([0.0, 100.0]), np.array([0.0]))
    assert not metrics._stuck_at_zero(np.array([np.nan]))  # no data says nothing


def test_latency_its_own_spans_do_not_show_is_not_the_entitys_own() -> None:
    ctx = context(_source())
    assert metrics.spans_disown(ctx, "front", Family.LATENCY) is None  # traces not analysed
    traces.analyse(ctx)
    disowned = metrics.spans_disown(ctx, "front", Family.LATENCY)
    assert disowned is not None
    assert disowned < 3.0
    assert metrics.spans_disown(ctx, "back", Family.LATENCY) is None  # its own time did rise
    assert metrics.spans_disown(ctx, "front", Family.CPU) is None  # spans do not measure CPU


def test_a_resource_family_needs_a_clearer_lead() -> None:
    assert metrics.dominance_for(Family.LATENCY) == DOMINANCE
    assert metrics.dominance_for(Family.CPU) > DOMINANCE


def test_an_entity_without_the_needed_series_is_unmeasured_not_healthy() -> None:
    ctx = context(_source())
    result = metrics.MetricsTool().run(ctx, Hypothesis(id="h", entity="back", fault_kind="errors"))
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
    z = metrics.short_reference_z(ctx, "svc", Family.LATENCY)
    assert 3.0 < z < 1e3
