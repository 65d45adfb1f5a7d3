"""The robust deviation: the spread a window is measured in, for a latency quantile read off histogram
buckets (`tail=True`) and for any other series."""

from __future__ import annotations

import numpy as np

from rca.telemetry.model import Direction
from rca.tools.stats import KNEE, deviation

# A dev case's recorded series (Nezha Online Boutique 2022-08-22, the 23 minutes before the incident
# window and the 15 of it): a p99 that sits at one bucket's edge (0.048 s) and spills into the next
# buckets in a third of its samples, before and during the incident alike.
PINNED_P99 = np.array(
    [
        0.0478,
        0.084,
        0.0248,
        0.179,
        0.0805,
        0.0865,
        0.0245,
        0.092,
        0.0481,
        0.0808,
        0.0482,
        0.0486,
        0.0476,
        0.0482,
        0.047,
        0.0725,
        0.0479,
        0.0474,
        0.064,
        0.047,
        0.0482,
        0.0469,
    ]
)
PINNED_P99_INCIDENT = np.array(
    [
        0.0486,
        0.127,
        0.0635,
        0.0483,
        0.048,
        0.0484,
        0.063,
        0.079,
        0.082,
        0.0485,
        0.153,
        0.0472,
        0.456,
        0.0481,
        0.408,
    ]
)
# The same case: a caller's p50 wait on the delayed callee, 5 ms, then 0.2 s for three minutes.
WAIT_P50 = np.array(
    [
        0.00367,
        0.00667,
        0.00667,
        0.00667,
        0.006,
        0.00625,
        0.006,
        0.005,
        0.00667,
        0.00329,
        0.004,
        0.005,
        0.0038,
        0.01,
        0.00411,
        0.005,
        0.005,
        0.005,
        0.00367,
        0.00708,
        0.00456,
        0.0042,
        0.0075,
    ]
)
WAIT_P50_INCIDENT = np.array(
    [
        0.005,
        0.00562,
        0.00333,
        0.005,
        0.005,
        0.00411,
        0.004,
        0.00643,
        0.005,
        0.212,
        0.175,
        0.25,
        0.005,
        0.00636,
        0.00531,
    ]
)


def test_a_quantile_that_spills_as_its_baseline_did_is_no_deviation() -> None:
    """The MAD sees only the pinned mode (a spread of 2 ms); the window is read at its 80th percentile,
    where the baseline spilled too, so the spread is measured there as well."""
    mad_only = deviation(PINNED_P99, PINNED_P99_INCIDENT, Direction.UP)
    found = deviation(PINNED_P99, PINNED_P99_INCIDENT, Direction.UP, tail=True)
    assert mad_only is not None
    assert found is not None
    assert mad_only.z > 10 * KNEE
    assert found.z < KNEE


def test_a_wait_that_steps_far_beyond_its_tail_still_deviates() -> None:
    """The delayed callee's origin signal keeps its size: its baseline's tail is no wider than its body."""
    mad_only = deviation(WAIT_P50, WAIT_P50_INCIDENT, Direction.UP)
    found = deviation(WAIT_P50, WAIT_P50_INCIDENT, Direction.UP, tail=True)
    assert mad_only is not None
    assert found is not None
    assert found.z > 5 * KNEE
    assert found.z > 0.8 * mad_only.z


def test_a_gaussian_baseline_keeps_its_sigma() -> None:
    """Where the body and the tail agree, the tail adds nothing: a step of 6 sigmas reads about 6."""
    baseline = np.random.default_rng(7).normal(100.0, 5.0, 400)
    up = deviation(baseline, np.full(10, 130.0), Direction.UP, tail=True)
    down = deviation(baseline, np.full(10, 70.0), Direction.DOWN, tail=True)
    assert up is not None
    assert down is not None
    assert 5.0 < up.z < 7.0
    assert 5.0 < down.z < 7.0
