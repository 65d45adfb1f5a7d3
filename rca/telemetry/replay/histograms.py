"""Latency histograms rebuilt from the summaries a recording keeps (a few quantiles, or a mean).

A recording keeps, per interval, quantiles such as p50/p90/p99 of request latency; a live cluster keeps a
histogram whose buckets `histogram_quantile()` interpolates. The replay writes the histogram a service
would have exported: the interval's requests spread over the buckets by a distribution that has exactly
the recorded quantiles.

The distribution (per interval): the cumulative distribution function is piecewise linear through
(0, 0) and each recorded (quantile value, probability), values made non-decreasing first (recorded
quantiles are estimates and p95 < p90 happens). Above the highest recorded quantile the last segment's
density carries on until the function reaches 1; with one quantile q_p only, the density is uniform on
[0, q_p / p]. With a mean and no quantile, every request of the interval takes the mean. `_sum` uses the
recorded mean when there is one, else the mean of that distribution.

Bucket bounds are the conventions' defaults (sources next to each constant); their coarseness is what a
live reading through `histogram_quantile()` sees, so the replay keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from rca.telemetry.replay.openmetrics import FloatArray

# OpenTelemetry semantic conventions, http.server.request.duration / http.client.request.duration:
# the advisory explicit bucket boundaries, in seconds.
HTTP_DURATION_BOUNDS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
)
# OpenTelemetry Collector span metrics connector (histogram.explicit.buckets) and service graph connector
# (latency_histogram_buckets): both default to 2ms, 4ms, 6ms, 8ms, 10ms, 50ms, 100ms, 200ms, 400ms,
# 800ms, 1s, 1400ms, 2s, 5s, 10s, 15s.
COLLECTOR_BOUNDS_MS: tuple[float, ...] = (
    2.0,
    4.0,
    6.0,
    8.0,
    10.0,
    50.0,
    100.0,
    200.0,
    400.0,
    800.0,
    1000.0,
    1400.0,
    2000.0,
    5000.0,
    10000.0,
    15000.0,
)
COLLECTOR_BOUNDS_SECONDS: tuple[float, ...] = tuple(b / 1000.0 for b in COLLECTOR_BOUNDS_MS)


def bucket_shares(
    bounds: tuple[float, ...],
    quantiles: Mapping[float, FloatArray],
    mean: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Per interval, the share of requests in each bucket and the mean latency (see module docstring).

    `quantiles` maps a probability (0.5, 0.99, ...) to the quantile's values over time; `mean`, when
    given, the mean latency over time (same length). Returns (shares of shape (T, len(bounds) + 1),
    the last column being above the last bound; means of shape (T,)); a row without a usable value is
    NaN throughout.
    """
    edges = np.asarray(bounds, dtype=np.float64)
    probs = sorted(quantiles)
    if not probs and mean is None:
        raise ValueError("a latency histogram needs at least one quantile or a mean")
    length = len(quantiles[probs[0]]) if probs else len(mean)  # type: ignore[arg-type]
    shares = np.full((length, edges.size + 1), np.nan)
    means = np.full(length, np.nan) if mean is None else np.asarray(mean, dtype=np.float64).copy()
    if not probs:
        # a mean alone: every request of the interval took the mean
        assert mean is not None
        ok = np.isfinite(means)
        idx = np.searchsorted(edges, np.clip(means[ok], 0.0, None), side="left")
        rows = np.zeros((int(ok.sum()), edges.size + 1))
        rows[np.arange(rows.shape[0]), idx] = 1.0
        shares[ok] = rows
        return shares, means
    values = np.column_stack([np.asarray(quantiles[p], dtype=np.float64) for p in probs])
    levels = np.asarray(probs, dtype=np.float64)
    usable = np.isfinite(values).all(axis=1)
    for i in np.flatnonzero(usable):
        xs, fs = _knots(np.maximum.accumulate(np.clip(values[i], 0.0, None)), levels)
        cdf = np.interp(edges, xs, fs)
        shares[i] = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
        if not np.isfinite(means[i]):
            means[i] = float(np.sum((xs[1:] + xs[:-1]) / 2.0 * np.diff(fs)))
    return shares, means


def _knots(values: FloatArray, levels: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The CDF's knots through (0, 0), the recorded quantiles and the extrapolated top (F = 1)."""
    xs = np.concatenate([[0.0], values])
    fs = np.concatenate([[0.0], levels])
    rise = fs[-1] - fs[-2]
    density_width = (xs[-1] - xs[-2]) / rise if rise > 0 else 0.0
    top = xs[-1] + (1.0 - fs[-1]) * density_width
    return np.concatenate([xs, [top]]), np.concatenate([fs, [1.0]])
