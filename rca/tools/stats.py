"""Robust statistics shared by the evidence tools: baseline-relative deviation and change points.

A deviation is a robust z-score: how far the incident window sits from the baseline median, in units
of the baseline's spread (MAD scaled to a standard deviation, floored so a flat baseline does not
turn noise into an infinite score). Direction matters: latency and CPU are bad when they go up,
success rates when they go down.

A value known only to an interval (a quantile read from histogram buckets is known to its bucket: where
inside it lies is the reader's interpolation, not a measurement) cannot deviate by less than that
interval's own uncertainty: the spread is also floored at the baseline's bucket resolution, the
standard deviation of a value spread evenly over its bucket (width / sqrt(12)).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import ruptures
import scipy.stats

from rca.core.verdict import DEFAULT_THRESHOLDS
from rca.telemetry.model import Direction, FloatArray, MetricSeries

MAD_TO_SIGMA = 1.4826
# A baseline's spread is never taken below this share of its level (flat series, quantised data).
RELATIVE_FLOOR = 0.02
# Success rates sit near their ceiling, where a drop of a fraction of a percent already matters.
RATE_RELATIVE_FLOOR = 0.002
# The high (or low) quantile of the incident window that represents it: robust to a fault that
# starts part-way through the window without being as noisy as the maximum.
WINDOW_QUANTILE = 0.8
# A level the series already reached in its baseline (this quantile of it) is within normal
# behaviour, however small the baseline's MAD: spiky series such as p99 latencies reach it often.
BASELINE_CEILING = 0.95
# Robust z-scores (and z-like scores) up to this are noise, in every tool and in seeding.
KNEE = 3.0
# A signal found among many tested (pairs, operations, callers) counts at 5 sigma: the discovery
# convention of physics for a look-elsewhere-corrected signal.
DISCOVERY_SIGMA = 5.0
# An episode holds for more than one sample; a one-sample excursion is a spike.
SUSTAINED_SAMPLES = 2
# The standard deviation of a value spread evenly over an interval is its width / sqrt(12) (the uniform
# distribution's; quantisation noise): what a value known only to its histogram bucket is uncertain by.
UNIFORM_SIGMA_PER_WIDTH = 1.0 / math.sqrt(12.0)


def _decisive_samples() -> int:
    """The fewest baseline points whose spread lets a deviation decide: a spread estimated from n points
    makes a z-score Student's t with n - 1 degrees of freedom, so being as sure as `KNEE` sigma of a
    known spread takes t's quantile at the normal's `KNEE`-sigma tail; while that quantile exceeds the
    discovery convention (`DISCOVERY_SIGMA`) the baseline is too short to decide anything (7 points)."""
    tail = float(scipy.stats.norm.cdf(KNEE))
    n = 2
    while float(scipy.stats.t.ppf(tail, n - 1)) > DISCOVERY_SIGMA:
        n += 1
    return n


DECISIVE_SAMPLES = _decisive_samples()


class Family(StrEnum):
    """Metric families; which ones moved tells the fault kind."""

    CPU = "cpu"
    MEMORY = "memory"
    LATENCY = "latency"
    ERRORS = "errors"
    TRAFFIC = "traffic"
    NETWORK = "network"
    IO = "io"
    DOWNSTREAM = "downstream"  # client-side measures of calls an entity makes (its callees' view)


_FAMILY_RULES: tuple[tuple[re.Pattern[str], Family, Direction], ...] = (
    (re.compile(r"^client_"), Family.DOWNSTREAM, Direction.UP),
    (re.compile(r"success|availability"), Family.ERRORS, Direction.DOWN),
    (re.compile(r"error|fail|5xx|exception"), Family.ERRORS, Direction.UP),
    (re.compile(r"latency|duration|response_time"), Family.LATENCY, Direction.UP),
    (re.compile(r"cpu"), Family.CPU, Direction.UP),
    (re.compile(r"mem"), Family.MEMORY, Direction.UP),
    (re.compile(r"network|net_|_bytes"), Family.NETWORK, Direction.BOTH),
    (re.compile(r"syscall|disk|io_"), Family.IO, Direction.BOTH),
    (re.compile(r"request|workload|throughput|qps|rps"), Family.TRAFFIC, Direction.BOTH),
)


def family_of(metric: str) -> tuple[Family, Direction] | None:
    """The family and bad direction of a metric name; None for metrics that are not the entity's own
    (node-level measures belong to the machine, not the service)."""
    name = metric.lower()
    if name.startswith("node_"):
        return None
    for pattern, family, direction in _FAMILY_RULES:
        if pattern.search(name):
            return family, direction
    return None


@dataclass(frozen=True, slots=True)
class Deviation:
    """How far an incident window deviates from its baseline, in the bad direction."""

    z: float  # robust z-score in the bad direction (negative: moved the good way)
    baseline: float  # baseline median
    observed: float  # the window's representative value
    relative: float  # (observed - baseline) / |baseline| (inf when the baseline is 0)
    samples: int  # how many baseline points the spread was estimated from
    spread: float = 1.0  # the baseline spread the z-score is measured in

    @property
    def thin(self) -> bool:
        """Whether the baseline held too few points for the deviation to decide (`DECISIVE_SAMPLES`)."""
        return self.samples < DECISIVE_SAMPLES

    @property
    def rise(self) -> float:
        """How far the window's value sits above the baseline median, in the series' own unit."""
        return self.observed - self.baseline

    def excess_over(self, level: float, direction: Direction) -> float:
        """The z-score of `observed` beyond `level` rather than beyond the baseline median: what the
        window adds to a level already reached before it (a `level` inside normal takes nothing off)."""
        if direction is Direction.UP:
            return (self.observed - max(self.baseline, level)) / self.spread
        if direction is Direction.DOWN:
            return (min(self.baseline, level) - self.observed) / self.spread
        return (abs(self.observed - self.baseline) - abs(level - self.baseline)) / self.spread


def resolution_spread(series: MetricSeries) -> float:
    """The spread a series' values are uncertain by because they are known only to an interval (see the
    module docstring): its median interval width times `UNIFORM_SIGMA_PER_WIDTH`; 0 for measured values."""
    if series.resolution is None:
        return 0.0
    widths = series.resolution[np.isfinite(series.resolution) & np.isfinite(series.values)]
    return float(np.median(widths)) * UNIFORM_SIGMA_PER_WIDTH if widths.size else 0.0


def failure_share(kind: tuple[Family, Direction] | None, unit: str) -> bool:
    """Whether a series of this family and unit is a failure share (an error ratio: errors, bad when it
    rises, unit "1"), the complement of a success rate."""
    return kind == (Family.ERRORS, Direction.UP) and unit == "1"


def ratio_floor(series: MetricSeries) -> float:
    """The spread floor of an error ratio (a failure share, bad when it rises): the success rate's,
    `RATE_RELATIVE_FLOOR` of the success share it complements (1 - its median), so that the same failures
    score alike read as a failure share or as a success rate; a relative floor on the ratio itself is
    none at all when it sits at 0. 0 for any other series."""
    if not failure_share(family_of(series.name), series.unit):
        return 0.0
    values = series.values[np.isfinite(series.values)]
    share = 1.0 - float(np.median(values)) if values.size else math.nan
    return RATE_RELATIVE_FLOOR * share if 0.0 <= share <= 1.0 else 0.0


def reference_floor(series: MetricSeries) -> float:
    """The least spread a deviation from the reference `series` is measured in, whatever its own MAD:
    its values' resolution (`resolution_spread`) and an error ratio's floor (`ratio_floor`)."""
    return max(resolution_spread(series), ratio_floor(series))


# numpy's median and quantile cost tens of microseconds of dispatch each, which on the engine's short
# series (about 60 points) is most of the work; `deviation` runs hundreds of times per investigation.
# These read an ascending array and give numpy's own values: the median as `np.median` (the mean of the
# middle pair) and the quantile by numpy's default linear method with its `_lerp` arithmetic, bit for bit.


def _median_sorted(ordered: FloatArray) -> float:
    mid = ordered.size // 2
    if ordered.size % 2:
        return float(ordered[mid])
    return (float(ordered[mid - 1]) + float(ordered[mid])) / 2


def _quantile_sorted(ordered: FloatArray, q: float) -> float:
    position = (ordered.size - 1) * q
    lower = math.floor(position)
    upper = min(lower + 1, ordered.size - 1)
    t = position - lower
    a, b = float(ordered[lower]), float(ordered[upper])
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


def _spread(ordered_base: FloatArray, med: float, relative_floor: float, resolution: float) -> float:
    mad = _median_sorted(np.sort(np.abs(ordered_base - med))) * MAD_TO_SIGMA
    return max(mad, relative_floor * abs(med), resolution, 1e-9)


def _runs(beyond: np.ndarray) -> list[tuple[int, int]]:
    """The (start, stop) index pairs of the runs of True in `beyond` (stop exclusive)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], beyond.astype(np.int8), [0]])))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _beyond(values: FloatArray, med: float, spread: float, direction: Direction) -> np.ndarray:
    """Which `values` lie beyond `DISCOVERY_SIGMA` spreads from `med` in the bad direction (UP or DOWN)."""
    sign = 1.0 if direction is Direction.UP else -1.0
    with np.errstate(invalid="ignore"):
        return np.asarray(sign * (values - med) / spread > DISCOVERY_SIGMA)


def _episodes(values: FloatArray, med: float, spread: float, direction: Direction) -> np.ndarray | None:
    """Which of the baseline's `values` (finite, in time order) belong to its episodes (see
    `_seen_outside_episodes`); None when its excursions are no episodes: there are none, one is a spike,
    or the last is still on at the baseline's end."""
    beyond = _beyond(values, med, spread, direction)
    if not beyond.any() or beyond[-1]:
        return None
    if min(b - a for a, b in _runs(beyond)) < SUSTAINED_SAMPLES:  # a spike: a pattern, not an episode
        return None
    return beyond


def outside_episodes(
    baseline: FloatArray,
    direction: Direction,
    relative_floor: float = RELATIVE_FLOOR,
    resolution: float = 0.0,
) -> FloatArray:
    """The baseline's finite values (in time order) without its episodes: an earlier incident the entity
    came out of was not its normal (`_seen_outside_episodes`)."""
    values = baseline[np.isfinite(baseline)]
    if values.size < 3 or direction is Direction.BOTH:
        return values
    ordered = np.sort(values)
    med = _median_sorted(ordered)
    episodes = _episodes(values, med, _spread(ordered, med, relative_floor, resolution), direction)
    return values if episodes is None else values[~episodes]


def _seen_outside_episodes(
    baseline: FloatArray, med: float, spread: float, direction: Direction, observed: float
) -> bool:
    """Whether the baseline reached `observed` outside its episodes (`deviation`'s "seen before").

    An episode is a stretch of the baseline beyond `DISCOVERY_SIGMA` spreads in the bad direction that
    held for more than one sample and ended before the baseline did: an earlier incident the entity
    came out of (a recording of consecutive faults holds the previous ones in the next one's
    baseline). A level reached only in episodes was not its normal. A baseline whose excursions include
    a one-sample spike shows a recurring pattern rather than episodes, and one that ends in an
    excursion is still in it: both keep every value. `baseline` is in time order."""
    values = baseline[np.isfinite(baseline)]
    episodes = _episodes(values, med, spread, direction)
    if episodes is None:
        return True
    normal = np.sort(values[~episodes])
    if direction is Direction.UP:
        return observed <= _quantile_sorted(normal, BASELINE_CEILING)
    return observed >= _quantile_sorted(normal, 1 - BASELINE_CEILING)


def beyond_normal(
    baseline: FloatArray, values: FloatArray, direction: Direction, relative_floor: float, resolution: float
) -> np.ndarray | None:
    """Which of `values` lie beyond `DISCOVERY_SIGMA` baseline spreads in the bad direction (the
    spread as `deviation` measures it); None when the baseline is too short to say."""
    base = np.sort(baseline[np.isfinite(baseline)])
    if base.size < 3 or direction is Direction.BOTH:
        return None
    med = _median_sorted(base)
    return _beyond(values, med, _spread(base, med, relative_floor, resolution), direction)


def ended_episodes(times: FloatArray, beyond: np.ndarray, before: float, calm: FloatArray) -> np.ndarray:
    """Which points (of a series' finite points at `times`, in time order, `beyond` from
    `beyond_normal`) belong to an episode that was over before the incident began: a stretch beyond
    normal for more than one sample that ended before `before` (the onset), followed, still before
    it, by a moment at which the alerting entity was calm (`calm`: such moments). The system had
    recovered from it: it was an earlier incident, not the one the alert is about."""
    out = np.zeros(beyond.size, dtype=bool)
    for start, stop in _runs(beyond):
        if stop - start < SUSTAINED_SAMPLES or stop >= beyond.size or times[stop] > before:
            continue  # a spike, a stretch still on at the window's end, or one that ended after onset
        if np.any((calm > times[stop - 1]) & (calm < before)):
            out[start:stop] = True
    return out


def deviation(
    baseline: FloatArray,
    window: FloatArray,
    direction: Direction,
    relative_floor: float = RELATIVE_FLOOR,
    resolution: float = 0.0,
) -> Deviation | None:
    """Robust deviation of `window` from `baseline`; None when either has too few finite points.

    `resolution` floors the spread absolutely (the reference's `reference_floor`)."""
    base = np.sort(baseline[np.isfinite(baseline)])
    win = np.sort(window[np.isfinite(window)])
    if base.size < 3 or win.size < 1:
        return None
    med = _median_sorted(base)
    spread = _spread(base, med, relative_floor, resolution)
    high, low = _quantile_sorted(win, WINDOW_QUANTILE), _quantile_sorted(win, 1 - WINDOW_QUANTILE)
    ceiling, floor = _quantile_sorted(base, BASELINE_CEILING), _quantile_sorted(base, 1 - BASELINE_CEILING)
    if direction is Direction.UP:
        observed = high
        z = (high - med) / spread
        seen_before = high <= ceiling
    elif direction is Direction.DOWN:
        observed = low
        z = (med - low) / spread
        seen_before = low >= floor
    else:
        observed = high if abs(high - med) >= abs(low - med) else low
        z = abs(observed - med) / spread
        seen_before = floor <= observed <= ceiling
    if seen_before and direction is not Direction.BOTH:
        seen_before = _seen_outside_episodes(baseline, med, spread, direction, observed)
    if seen_before:
        z = min(z, KNEE)
    relative = (observed - med) / abs(med) if med != 0 else (math.inf if observed != med else 0.0)
    return Deviation(
        z=z, baseline=med, observed=observed, relative=relative, spread=spread, samples=base.size
    )


def deviation_from(
    reference: MetricSeries, window: FloatArray, direction: Direction, relative_floor: float = RELATIVE_FLOOR
) -> Deviation | None:
    """`deviation` of `window` from the values of the `reference` series, its spread floored at the
    reference's own `reference_floor` (bucket resolution, error-ratio floor)."""
    return deviation(reference.values, window, direction, relative_floor, reference_floor(reference))


def peak_z(
    baseline: FloatArray,
    window: FloatArray,
    direction: Direction,
    relative_floor: float = RELATIVE_FLOOR,
    resolution: float = 0.0,
    held: int = 1,
) -> float:
    """How far the window's single worst point lies beyond everything the baseline ever showed, in
    baseline spreads (0 when it stays within the baseline's range or either side is too short).

    Not evidence of a fault (one minute proves nothing), but evidence against "it did not move": a burst
    of failures covering a few minutes escapes the window quantile `deviation` reads. With `held` > 1 the
    window's point is the worst level it held for `held` consecutive samples (an episode, not a spike)."""
    base = np.sort(baseline[np.isfinite(baseline)])
    win = window[np.isfinite(window)]
    if base.size < 3 or win.size < held:
        return 0.0
    if held > 1:
        runs = np.lib.stride_tricks.sliding_window_view(win, held)
        lows, highs = runs.min(axis=1), runs.max(axis=1)  # what each stretch of `held` stayed above / below
        if direction is Direction.UP:
            win = lows
        elif direction is Direction.DOWN:
            win = highs
        else:
            win = np.concatenate([lows, highs])
    med = _median_sorted(base)
    spread = _spread(base, med, relative_floor, resolution)
    up = float(win.max()) - float(base.max())
    down = float(base.min()) - float(win.min())
    beyond = {Direction.UP: up, Direction.DOWN: down}.get(direction, max(up, down))
    return max(0.0, beyond) / spread


def floor_for(family: Family) -> float:
    """The relative spread floor suited to a family."""
    return RATE_RELATIVE_FLOOR if family is Family.ERRORS else RELATIVE_FLOOR


def squash(z: float, knee: float = KNEE, scale: float = 3.0) -> float:
    """Map a z-score to [0, 1): 0 up to `knee`, about 0.63 at knee + scale, 0.86 at knee + 2 scale."""
    if not math.isfinite(z):
        return 1.0 if z > 0 else 0.0
    return 1.0 - math.exp(-max(0.0, z - knee) / scale)


def change_point(times: FloatArray, values: FloatArray) -> float | None:
    """The time of the single strongest mean shift in a series (ruptures, binary segmentation)."""
    mask = np.isfinite(values)
    t, v = times[mask], values[mask]
    if v.size < 6 or float(np.ptp(v)) == 0.0:
        return None
    algo = ruptures.Binseg(model="l2", min_size=2, jump=1).fit(v.reshape(-1, 1))
    breaks = algo.predict(n_bkps=1)
    index = breaks[0]
    return float(t[index]) if 0 < index < v.size else None


def same_stream(a: MetricSeries, b: MetricSeries, min_points: int = 2) -> bool:
    """Whether two instances report the same points where both report (a replaced pod's series carrying
    its successor's values under the old name)."""
    common, ia, ib = np.intersect1d(a.timestamps, b.timestamps, return_indices=True)
    if common.size < min_points:
        return False
    va, vb = a.values[ia], b.values[ib]
    ok = np.isfinite(va) & np.isfinite(vb)
    return int(ok.sum()) >= min_points and bool(np.allclose(va[ok], vb[ok]))


# The band a tool keeps a score in when its evidence cannot decide: just under the classifier's
# support line and just over its refutation line (rca.core.verdict.Thresholds).
CONTESTED = round(DEFAULT_THRESHOLDS.anomaly_supports - 0.01, 2)
UNREMARKABLE = round(DEFAULT_THRESHOLDS.anomaly_refutes + 0.01, 2)
# Support needs the suspect's own signal to lead every other entity's by this factor: when two
# entities deviate alike and neither explains the other, the telemetry cannot say which is the origin.
DOMINANCE = 1.5


def unrefuted(score: float, uncleared: bool) -> float:
    """`score`, kept just over the refutation line when the telemetry cannot clear the entity (it
    moved past the knee, or the fault is one this telemetry cannot show): only quiet evidence refutes."""
    return max(score, UNREMARKABLE) if uncleared else score


def supported(score: float, decisive: bool, lead: float, dominance: float = DOMINANCE) -> float:
    """Keep a score below support unless the evidence is decisive (it rests on the entity's own
    reference) and the entity leads every other one by `dominance`."""
    if not decisive or lead < dominance:
        return min(score, CONTESTED)
    return score
