"""Latency histograms rebuilt from recorded quantiles keep those quantiles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rca.telemetry.replay.histograms import (
    COLLECTOR_BOUNDS_MS,
    COLLECTOR_BOUNDS_SECONDS,
    HTTP_DURATION_BOUNDS,
    bucket_shares,
)

FINE = tuple(np.round(np.arange(0.001, 5.0, 0.001), 6))


def quantile_from_shares(shares: np.ndarray, bounds: tuple[float, ...], p: float) -> float:
    """What histogram_quantile() computes: linear interpolation inside the bucket holding rank p."""
    cdf = np.concatenate([[0.0], np.cumsum(shares[:-1])])
    edges = np.concatenate([[0.0], bounds])
    i = int(np.searchsorted(cdf, p, side="left"))
    lo, hi = edges[i - 1], edges[i]
    return float(lo + (hi - lo) * (p - cdf[i - 1]) / (cdf[i] - cdf[i - 1]))


def test_recorded_quantiles_come_back_through_interpolation() -> None:
    quantiles = {0.5: np.array([0.2]), 0.9: np.array([0.8]), 0.99: np.array([2.0])}
    shares, mean = bucket_shares(FINE, quantiles)
    assert shares.shape == (1, len(FINE) + 1)
    assert shares.sum() == pytest.approx(1.0)
    for p, q in quantiles.items():
        assert quantile_from_shares(shares[0], FINE, p) == pytest.approx(float(q[0]), abs=0.002)
    # the last segment's density (0.09 of mass per 1.2 s) carries the last 1 % to 2 + 0.01 / 0.075
    top = 2.0 + 0.01 * (2.0 - 0.8) / 0.09
    assert quantile_from_shares(shares[0], FINE, 0.999) == pytest.approx(2.0 + 0.009 * 1.2 / 0.09, abs=0.002)
    knots = np.array([0.0, 0.2, 0.8, 2.0, top])
    probs = np.array([0.0, 0.5, 0.9, 0.99, 1.0])
    expected_mean = float(np.sum((knots[1:] + knots[:-1]) / 2 * np.diff(probs)))
    assert mean[0] == pytest.approx(expected_mean)


def test_one_quantile_spreads_requests_uniformly_below_its_extrapolated_top() -> None:
    shares, mean = bucket_shares((0.5, 1.0, 1.5), {0.5: np.array([0.5])})
    assert shares[0] == pytest.approx([0.5, 0.5, 0.0, 0.0])
    assert mean[0] == pytest.approx(0.5)


def test_a_mean_alone_puts_every_request_at_the_mean() -> None:
    shares, mean = bucket_shares((0.1, 1.0), {}, np.array([0.05, 0.1, 3.0, np.nan]))
    assert shares[:3].tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    assert np.isnan(shares[3]).all()
    assert mean[:3].tolist() == [0.05, 0.1, 3.0]


def test_recorded_mean_beats_the_distributions_mean_and_gaps_stay_gaps() -> None:
    shares, mean = bucket_shares(
        HTTP_DURATION_BOUNDS,
        {0.5: np.array([0.1, np.nan]), 0.9: np.array([0.3, 0.4])},
        np.array([0.25, 0.2]),
    )
    assert mean.tolist() == [0.25, 0.2]
    assert np.isfinite(shares[0]).all()
    assert np.isnan(shares[1]).all()  # a missing quantile: no distribution for that interval


def test_quantiles_out_of_order_are_made_monotone() -> None:
    shares, _ = bucket_shares(FINE, {0.9: np.array([0.5]), 0.95: np.array([0.4]), 0.99: np.array([1.0])})
    assert (shares >= -1e-12).all()
    assert quantile_from_shares(shares[0], FINE, 0.95) == pytest.approx(0.5, abs=0.002)


def test_zero_latency_lands_in_the_first_bucket() -> None:
    shares, mean = bucket_shares(HTTP_DURATION_BOUNDS, {0.5: np.array([0.0]), 0.99: np.array([0.0])})
    assert shares[0, 0] == pytest.approx(1.0)
    assert mean[0] == 0.0


def test_nothing_to_build_from_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one quantile or a mean"):
        bucket_shares(HTTP_DURATION_BOUNDS, {})


def test_convention_bounds() -> None:
    assert HTTP_DURATION_BOUNDS[0] == 0.005
    assert HTTP_DURATION_BOUNDS[-1] == 10.0
    assert len(COLLECTOR_BOUNDS_MS) == len(COLLECTOR_BOUNDS_SECONDS) == 16
    assert COLLECTOR_BOUNDS_SECONDS[10] == 1.0


LEVELS = [(0.5,), (0.5, 0.9), (0.5, 0.9, 0.99), (0.9, 0.95, 0.99), (0.5, 0.9, 0.95, 0.99)]


@given(st.data())
def test_any_recorded_quantiles_survive_a_fine_histogram(data: st.DataObject) -> None:
    levels = data.draw(st.sampled_from(LEVELS))
    values = sorted(
        data.draw(
            st.lists(st.floats(min_value=0.001, max_value=4.0), min_size=len(levels), max_size=len(levels))
        )
    )
    quantiles = {p: np.array([v]) for p, v in zip(levels, values, strict=True)}
    shares, mean = bucket_shares(FINE, quantiles)
    assert shares.sum() == pytest.approx(1.0)
    assert (shares >= -1e-12).all()
    assert np.isfinite(mean).all()
    for p, v in zip(levels, values, strict=True):
        if values.count(v) == 1:  # tied quantiles make the distribution jump there
            assert quantile_from_shares(shares[0], FINE, p) == pytest.approx(v, abs=0.0021)
