"""The robust statistics the tools score with: the sorted-array median and quantiles `deviation` reads
must be numpy's own values, bit for bit (they replace `np.median` / `np.quantile` for speed only)."""

from __future__ import annotations

import numpy as np
import pytest

from rca.telemetry.model import Direction
from rca.tools import stats

QUANTILES = (
    stats.WINDOW_QUANTILE,
    1 - stats.WINDOW_QUANTILE,
    stats.BASELINE_CEILING,
    1 - stats.BASELINE_CEILING,
    0.0,
    0.37,
    0.5,
    1.0,
)


def _arrays(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for n in [1, 2, 3, 4, *rng.integers(5, 240, size=60).tolist()]:
        out += [
            rng.normal(size=n),
            rng.lognormal(size=n) * 1e-3,  # latencies in seconds
            rng.integers(0, 4, size=n).astype(float),  # ties (counts)
        ]
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sorted_median_and_quantiles_are_numpys_bit_for_bit(seed: int) -> None:
    for values in _arrays(seed):
        ordered = np.sort(values)
        assert stats._median_sorted(ordered) == float(np.median(values))
        for q in QUANTILES:
            assert stats._quantile_sorted(ordered, q) == float(np.quantile(values, q))


def test_deviation_reads_the_window_quantile_against_the_baseline_median_and_mad() -> None:
    rng = np.random.default_rng(3)
    baseline = rng.normal(10.0, 1.0, size=60)
    window = np.concatenate([rng.normal(10.0, 1.0, size=5), rng.normal(20.0, 1.0, size=10)])
    found = stats.deviation(baseline, window, Direction.UP)
    assert found is not None
    med = float(np.median(baseline))
    spread = max(float(np.median(np.abs(baseline - med))) * stats.MAD_TO_SIGMA, stats.RELATIVE_FLOOR * med)
    high = float(np.quantile(window, stats.WINDOW_QUANTILE))
    assert found.baseline == med
    assert found.spread == spread
    assert found.observed == high
    assert found.z == (high - med) / spread
    assert stats.deviation(baseline[:2], window, Direction.UP) is None  # too short a baseline


def _with_stretches(stretches: list[tuple[int, int]], level: float = 1.0) -> np.ndarray:
    """A 40-sample baseline at ~0.02 (a small ripple), raised to `level` over each [start, end)."""
    values = 0.02 + 0.001 * np.sin(np.arange(40.0))
    for start, end in stretches:
        values[start:end] = level
    return values


def test_a_level_the_baseline_reached_only_in_an_earlier_episode_was_not_its_normal() -> None:
    """Consecutive faults: the previous one's stretch sits in the next one's baseline. The window's
    level was seen there, but only while the entity was itself out of its normal."""
    window = np.full(10, 1.0)
    for stretches in ([(10, 14)], [(5, 8), (20, 23)]):  # one earlier episode, or two
        found = stats.deviation(_with_stretches(stretches), window, Direction.UP)
        assert found is not None
        assert found.z > stats.DISCOVERY_SIGMA
    # still in it when the baseline ends: the level was held before the window began
    ongoing = stats.deviation(_with_stretches([(34, 40)]), window, Direction.UP)
    # one-sample spikes among the excursions: a recurring pattern, which the cap keeps
    spiky = stats.deviation(_with_stretches([(5, 6), (12, 15), (30, 31)]), window, Direction.UP)
    # a drop the baseline showed only in an episode counts the same way downwards
    dip = stats.deviation(_with_stretches([(10, 14)], -0.9) + 1.0, np.full(10, 0.1), Direction.DOWN)
    for capped in (ongoing, spiky):
        assert capped is not None
        assert capped.z == stats.KNEE
    assert dip is not None
    assert dip.z > stats.DISCOVERY_SIGMA


def test_an_episode_over_before_onset_with_a_calm_moment_after_it_is_set_aside() -> None:
    """Minute points of a 15-minute window, onset at minute 12. A stretch beyond normal at minutes 2-4,
    followed at minute 7 by a moment at which the alerting entity was calm, was an earlier incident:
    set aside. Without that calm moment (the symptom never recovered in between), a stretch that is
    still on at onset, and a one-sample spike are all kept."""
    times = np.arange(15) * 60.0
    before = 12 * 60.0
    earlier = np.isin(np.arange(15), [2, 3, 4])
    calm = np.array([1 * 60.0, 7 * 60.0])
    assert list(np.flatnonzero(stats.ended_episodes(times, earlier, before, calm))) == [2, 3, 4]
    assert not stats.ended_episodes(times, earlier, before, np.array([1 * 60.0])).any()
    assert not stats.ended_episodes(times, earlier, before, np.array([13 * 60.0])).any()
    ongoing = np.isin(np.arange(15), [10, 11, 12, 13])
    assert not stats.ended_episodes(times, ongoing, before, calm).any()
    spike = np.isin(np.arange(15), [3])
    assert not stats.ended_episodes(times, spike, before, calm).any()


def test_beyond_normal_reads_the_bad_direction_at_five_sigma() -> None:
    """The baseline's median and spread as `deviation` measures them; a drop is not beyond normal for
    a series bad when it rises, and a series without a bad direction has no episodes."""
    baseline = np.array([1.0, 1.1, 0.9, 1.0, 1.05, 0.95])
    values = np.array([1.0, 3.0, -1.0])
    beyond = stats.beyond_normal(baseline, values, Direction.UP, 0.02, 0.0)
    assert beyond is not None
    assert list(beyond) == [False, True, False]
    assert stats.beyond_normal(baseline, values, Direction.BOTH, 0.02, 0.0) is None
    assert stats.beyond_normal(baseline[:2], values, Direction.UP, 0.02, 0.0) is None


def test_a_deviation_from_fewer_than_seven_baseline_points_cannot_decide() -> None:
    # Student's t at the normal's 3-sigma tail: 5.51 with 5 degrees of freedom, 4.90 with 6.
    assert stats.DECISIVE_SAMPLES == 7
    window = np.full(5, 30.0)
    six = stats.deviation(np.array([10.0, 10.2, 9.9, 10.1, 9.8, 10.0]), window, Direction.UP)
    seven = stats.deviation(np.array([10.0, 10.2, 9.9, 10.1, 9.8, 10.0, 10.1]), window, Direction.UP)
    assert six is not None
    assert seven is not None
    assert (six.samples, six.thin, seven.samples, seven.thin) == (6, True, 7, False)
    assert six.z > stats.DISCOVERY_SIGMA  # thin is not small: it ranks, it does not decide


def test_outside_episodes_drops_an_earlier_incident_and_keeps_a_spiky_pattern() -> None:
    calm = [100.0, 100.1, 99.9, 100.0, 100.2, 99.8, 100.0, 100.1]
    dipped = np.array([*calm[:3], 50.0, 55.0, 60.0, *calm[3:]])  # an episode over before the baseline ends
    assert stats.outside_episodes(dipped, Direction.DOWN, stats.RATE_RELATIVE_FLOOR).tolist() == calm
    spiky = np.array([*calm[:3], 50.0, *calm[3:]])  # one-sample excursion: a pattern, kept
    assert stats.outside_episodes(spiky, Direction.DOWN, stats.RATE_RELATIVE_FLOOR).size == spiky.size


def test_a_held_peak_reads_the_level_kept_for_that_many_samples() -> None:
    base = np.array([100.0, 100.1, 99.9, 100.0, 100.2, 99.8, 100.0])
    spike = np.array([100.0, 90.0, 100.0, 100.0])
    burst = np.array([100.0, 95.0, 94.0, 100.0])
    floor = stats.RATE_RELATIVE_FLOOR
    assert stats.peak_z(base, spike, Direction.DOWN, floor) > 0.0
    assert stats.peak_z(base, spike, Direction.DOWN, floor, held=2) == 0.0
    # Held for two samples: 95 (not 94), below the baseline's lowest 99.8, in its spread (the 0.2 floor).
    assert stats.peak_z(base, burst, Direction.DOWN, floor, held=2) == pytest.approx((99.8 - 95.0) / 0.2)
