"""The metrics tool's data-quality rules: quantiles over too few requests, dead success rates, latency
that the entity's own spans do not show, and the lead a resource family needs."""

from __future__ import annotations

import numpy as np

from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import MetricSeries, TimeWindow
from rca.tools.metrics.analysis import dominance_for, requests_per_sample, stuck_at_zero, too_few_for_quantile
from rca.tools.metrics.profile import short_reference_z, spans_disown
from rca.tools.metrics.tool import MetricsTool
from rca.tools.stats import DOMINANCE, Family
from rca.tools.traces.profile import analyse as analyse_traces
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
    volumes = requests_per_sample([per_second, per_sample, other], window)
    assert volumes == {"pod-a": 30.0, None: 30.0}
    assert requests_per_sample([per_second], TimeWindow(0.0, 10.0)) == {}


def test_a_quantile_needs_enough_requests_to_be_more_than_the_slowest_one() -> None:
    assert too_few_for_quantile("latency_p99", 36.0)  # p99 needs 100 requests
    assert not too_few_for_quantile("latency_p90", 36.0)  # p90 needs 10
    assert too_few_for_quantile("latency_p999", 500.0)
    assert not too_few_for_quantile("latency_mean", 1.0)  # not a quantile
    assert not too_few_for_quantile("latency_p99", None)  # volume unknown: kept


def test_a_success_rate_of_zero_throughout_is_unmeasured() -> None:
    assert stuck_at_zero(np.array([0.0, np.nan]), np.array([0.0, 0.0]))
    assert not stuck_at_zero(np.array([0.0, 100.0]), np.array([0.0]))
    assert not stuck_at_zero(np.array([np.nan]))  # no data says nothing


def test_latency_its_own_spans_do_not_show_is_not_the_entitys_own() -> None:
    ctx = context(_source())
    assert spans_disown(ctx, "front", Family.LATENCY) is None  # traces not analysed
    analyse_traces(ctx)
    disowned = spans_disown(ctx, "front", Family.LATENCY)
    assert disowned is not None
    assert disowned < 3.0
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
