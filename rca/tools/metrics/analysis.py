"""Metrics analysis: pure functions over metric series (no telemetry is read here).

What a series' deviation means for the entity that reports it: which series carry a replaced
instance's successor, which rates rest on too few requests, how an entity's own deviation scores
against the incident's noise and its runner-up.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from rca.telemetry.model import Direction, FloatArray, MetricSeries, TimeWindow, split_edge_name
from rca.tools.stats import (
    DOMINANCE,
    KNEE,
    Deviation,
    Family,
    deviation,
    failure_share,
    family_of,
    floor_for,
    same_stream,
    squash,
    supported,
    unrefuted,
)

PROPAGATING = frozenset({Family.LATENCY, Family.ERRORS})
# A success or error rate over fewer requests than this per sample is noise (its binomial standard
# error is too wide to count as evidence), so it is dropped when the entity reports its volume.
MIN_REQUESTS_FOR_RATES = 5.0


@dataclass(frozen=True)
class FamilyFinding:
    """The most deviating series of one family of one entity.

    `anchored` is False when the series reported nothing in the incident window before onset while
    the window reaches back before it: the deviation then rests on the baseline alone, with no local
    reference that the entity was normal just before the symptom appeared.
    """

    family: Family
    metric: str
    instance: str | None
    deviation: Deviation
    onset: float | None  # change point of that series, when one is found
    anchored: bool = True
    unit: str = ""  # the series' unit: rises of two findings compare only in the same unit
    # For a server-side latency: the rise of the entity's own client-side wait on its callees (the same
    # quantile, `client_<name>`), in this finding's z units: the part of the rise spent waiting.
    waited: float = 0.0


@dataclass(frozen=True)
class Silence:
    """An entity whose every series stopped reporting by onset: the strongest of its series read as
    zeroed (a pod that is gone uses no CPU or memory and serves nothing), and the time by which it
    would have reported `MISSED_SAMPLES` more samples had it been up."""

    finding: FamilyFinding
    overdue: float


@dataclass
class MetricProfile:
    """Every family's strongest deviation for one entity."""

    entity: str
    findings: dict[Family, FamilyFinding] = field(default_factory=dict)
    peaks: dict[Family, float] = field(default_factory=dict)  # worst single point beyond the baseline
    # Errors only: the worst level held for SUSTAINED_SAMPLES samples beyond the baseline outside its
    # episodes.
    bursts: dict[Family, float] = field(default_factory=dict)
    # Each family's strongest deviation per instance (None: series of the entity as a whole), for
    # the detail level of a hypothesis: which pod or series carries the entity's fault.
    instances: dict[Family, dict[str | None, FamilyFinding]] = field(default_factory=dict)
    # Every scored series' finding per family, strongest or not: what a caller inherits from this entity
    # is measured on the series that matches the caller's (`inherited_z`), not only on the strongest.
    series: dict[Family, list[FamilyFinding]] = field(default_factory=dict)
    last_report: float = -math.inf  # the latest finite point of any of its series in the incident
    silence: Silence | None = None  # its telemetry stopped by onset (see `went_silent`)

    def z(self, family: Family) -> float:
        """The family's z-score (0 when the family is absent or moved the good way)."""
        found = self.findings.get(family)
        return max(0.0, found.deviation.z) if found else 0.0


# A pod is taken as down once this many consecutive samples are missing: the failure threshold
# Kubernetes' probes use by default (`failureThreshold: 3`).
MISSED_SAMPLES = 3


def went_silent(
    series: list[MetricSeries],
    baselines: dict[tuple[str, str | None], MetricSeries],
    window: TimeWindow,
    onset: float,
) -> Silence | None:
    """Whether the entity's telemetry stopped at onset: it reported in the incident window, none of its
    instances' series has a point from one sample after onset on, and the window runs long enough after
    that for `MISSED_SAMPLES` samples to be missing. Its zeroed series are scored against their baselines
    (the missing points read as 0), the strongest kept.

    Only instance series are the entity's own telemetry: a series of the entity as a whole may be
    recorded by its callers or a load balancer on its behalf (a record of calls to it), and keeps coming
    when it is gone."""
    best: FamilyFinding | None = None
    reported, overdue = False, -math.inf
    for s in series:
        if s.instance is None:
            continue
        finite = s.timestamps[np.isfinite(s.values)]
        if finite.size < 2:
            continue
        step = float(np.median(np.diff(finite)))
        last = float(finite.max())
        if last >= onset + step or window.end < onset + (MISSED_SAMPLES + 1) * step:
            return None  # still reporting, or too little time after onset to tell
        reported = reported or last >= window.start
        overdue = max(overdue, last + MISSED_SAMPLES * step)
        base = baselines.get((s.name, s.instance))
        kind = family_of(s.name)
        if base is None or kind is None:
            continue
        dev = deviation(base.values, np.zeros(1), Direction.DOWN, floor_for(kind[0]))
        if dev is not None and (best is None or dev.z > best.deviation.z):
            best = FamilyFinding(kind[0], s.name, s.instance, dev, None, True, s.unit)
    return Silence(best, overdue) if reported and best is not None else None


# The latest level of a series is the median of its last three samples: the fewest whose median
# ignores one outlying sample.
LATEST_SAMPLES = 3


def stock_deviation(
    dev: Deviation, baseline: FloatArray, window: FloatArray, direction: Direction
) -> Deviation:
    """The deviation of a stock (memory): its latest level when that deviates more than the window does.

    Memory keeps what it took until it is freed, so a leak is a trend: its level grows through the
    window and is highest at its end, where the window's quantile (which stands for a level shift from
    part-way through the window on) sees only part of it. A level shift (a hog's allocation at onset)
    reads the same either way, and a pod restarted on running out of memory ends low, so nothing
    changes for them."""
    finite = window[np.isfinite(window)]
    if finite.size < LATEST_SAMPLES:
        return dev
    latest = deviation(
        baseline, np.array([np.median(finite[-LATEST_SAMPLES:])]), direction, floor_for(Family.MEMORY)
    )
    return latest if latest is not None and latest.z > dev.z else dev


def stock_movement(dev: Deviation, window: FloatArray) -> Deviation:
    """`dev` counted only as far as the stock moved within the window: the largest distance of its level
    (a running median of `LATEST_SAMPLES`, as the latest level is read) from its level at the window's
    start, in the baseline's spread.

    For a baseline that does not run up to the incident window (a separate normal recording): the level
    a stock (memory) held when the window began was reached at a time nothing was recorded, so it is no
    sign of what happened in the window. A container that merely runs at another level in another
    recording holds it flat; an origin allocating or freeing in the window moves (a leak grows, a
    stressor allocates and frees)."""
    finite = window[np.isfinite(window)]
    if finite.size < LATEST_SAMPLES:
        return dev
    levels = np.median(np.lib.stride_tricks.sliding_window_view(finite, LATEST_SAMPLES), axis=1)
    moved = float(np.max(np.abs(levels - levels[0]))) / dev.spread  # levels[0]: the window's start
    return replace(dev, z=min(dev.z, moved))


# A delay adds along the call chain: a request waits an origin's rise once per call it makes to it in
# sequence, so the symptom's latency rises by about the origin's rise times those calls. With at most
# this many sequential calls per request assumed (an order of magnitude of fan-out), an entity whose own
# latency rose by less than this share of the symptom's rise cannot be the delay behind it, and a
# callee's rise accounts for at most this many times itself in its caller.
MAX_SEQUENTIAL_CALLS = 10.0


def inherited_z(mine: FamilyFinding, callee: FamilyFinding) -> float:
    """How much of `mine` (a caller's deviation) a callee's deviation of the same family accounts for,
    in the caller's z units.

    A caller waits on its callee: its latency rises by about the callee's rise in seconds (its error
    rate by at most the callee's, in the same unit), whatever the two baselines' spreads are. A z-score
    measures a rise in its own baseline's spread, so the callee's z says little about the caller's: a
    quiet caller turns the same rise into a far larger z. The callee's rise is therefore measured in
    the caller's spread, when both are in the same unit and the callee's deviation stands out of its
    own noise (past the knee); otherwise its z-score is all that can be compared, as before. A caller
    that calls it several times per request waits its rise as many times, which its z-score stands for
    where that is the larger, but never beyond `MAX_SEQUENTIAL_CALLS` times its rise: a quiet callee's
    small rise does not account for a caller's far larger one, however large its own z-score (a callee
    1 ms slower at 17 sigma does not account for a caller 1.9 s slower).

    Nor is a rise in a higher quantile of the callee's latency than the caller's: a slower tail of the
    callee's calls (its p99) reaches only the caller's own tail, never its median, so it cannot account
    for a rise in the caller's p50 whatever its size in seconds.
    """
    z = max(0.0, callee.deviation.z)
    if not in_seconds(callee, mine):
        return z
    one_call = z * callee.deviation.spread / mine.deviation.spread
    return max(one_call, min(z, MAX_SEQUENTIAL_CALLS * one_call))


def inherited_from(mine: FamilyFinding, strongest: FamilyFinding, series: Iterable[FamilyFinding]) -> float:
    """How much of `mine` a callee accounts for (`inherited_z`): on its strongest finding, or on any
    other of its series that compares with `mine` in seconds (same unit, past the knee, no higher a
    quantile), whichever accounts for more.

    A caller's quantile waits on the same part of its callee's calls, the tail of its requests on the
    callee's tail. The callee's strongest series by z may be another quantile than the caller's, with a
    smaller rise in seconds (a p90 with a tight baseline beside a p99 that rose further); netting on it
    alone leaves the rest of the callee's rise in the caller, as if the caller's own."""
    comparable = (f for f in series if in_seconds(f, mine))
    return max(inherited_z(mine, f) for f in (strongest, *comparable))


def in_seconds(callee: FamilyFinding, mine: FamilyFinding) -> bool:
    """Whether the callee's rise can be weighed against the caller's in their unit: it stands out of
    its own noise (past the knee), both have the same unit, and it is no higher a latency quantile
    than the caller's (a slower tail reaches only the caller's tail)."""
    if callee.deviation.z < KNEE or not mine.unit or mine.unit != callee.unit:
        return False
    theirs = quantile_level(split_edge_name(callee.metric)[0])
    ours = quantile_level(split_edge_name(mine.metric)[0])
    return theirs is None or ours is None or theirs <= ours


def quantile_level(name: str) -> float | None:
    """The quantile a latency metric name ends in (`latency_p99` -> 0.99), None for a mean or any other
    statistic."""
    m = _QUANTILE.search(name)
    if m is None:
        return None
    digits = m.group(1)
    return int(digits) / 10.0 ** len(digits)


CLIENT_PREFIX = "client_"  # the telemetry model's name of a client-side measure (rca.tools.stats)


def client_of(name: str) -> str:
    """The client-side twin of a server-side metric: the same measure of the calls the entity makes."""
    return CLIENT_PREFIX + name


def waited_z(server: Deviation, client: Deviation | None) -> float:
    """How much of a server-side latency rise the entity spent waiting on its callees, in the server
    series' z units: its client-side wait's rise (window value over baseline median, as the server's).

    A server span's time is its own work plus the time its calls to callees take (span self-time is
    the difference); a latency metric pair measures both sides, so the same difference holds for the
    metrics: a caller whose server latency rose by what its client-side wait rose merely waits."""
    if client is None:
        return 0.0
    return max(0.0, client.rise) / server.spread


def waited_callee(name: str, caller: str) -> str | None:
    """The callee whose calls by `caller` a series measures the client-side latency of (a `client_`
    latency series labelled `{caller=<caller>,callee=..}`); None for any other series."""
    base, edge_caller, callee = split_edge_name(name)
    if edge_caller != caller or callee is None or not base.startswith(CLIENT_PREFIX):
        return None
    return callee if family_of(base[len(CLIENT_PREFIX) :]) == (Family.LATENCY, Direction.UP) else None


def callers_wait(waits: dict[str, dict[str, Deviation]], entity: str) -> tuple[str, Deviation] | None:
    """The entity's latency as its callers see it: of every caller that measures its calls to the
    entity, the one that waits least longer on it, and that wait (None when none measures them).

    A delay on the entity's network (anywhere between its callers' sockets and its own server-side
    measurement) never shows in its server-side latency, only in what its callers wait, and all of them
    wait together, as they do on a callee that is itself slow: the least any caller's wait rose is what
    the entity shows them all. A caller whose wait rose on all of its callees alike is waiting on its
    own side (its own network or CPU): only what its wait on the entity adds over its least-waiting
    other callee is the entity's (`waits` holds, besides the entity, only callees that do not
    themselves depend on it). The waits are compared in seconds, and what the entity's adds is
    measured in the spread of that difference (both edges' spreads): a late network on the caller
    adds the same time to every call it makes, however quiet or noisy each edge's baseline."""
    shares = []
    for caller, edges in waits.items():
        if entity not in edges:
            continue
        mine = edges[entity]
        others = [(d.rise, d.spread) for callee, d in edges.items() if callee != entity]
        common, spread = min(others, default=(0.0, 0.0))
        if common <= 0.0:
            shares.append((caller, mine))
            continue
        beyond = (mine.rise - common) / math.hypot(mine.spread, spread)
        shares.append((caller, replace(mine, z=max(0.0, min(mine.z, beyond)))))
    return min(shares, key=lambda s: s[1].z, default=None)


def handed_over(
    incident: list[MetricSeries], baseline_keys: set[tuple[str, str | None]]
) -> list[MetricSeries]:
    """Instance series cut where they start carrying a successor's points.

    When a pod is replaced, collectors may keep reporting the new pod's values under the old pod's name
    as well: from then on the old series is the successor's stream (another version, another level),
    not a change of the old instance, so it is cut where the successor (an instance without baseline
    points) starts. Flat values shared by chance (two pods at 100 % success) prove no shared stream.
    """
    fresh = [
        s
        for s in incident
        if s.instance is not None and (s.name, s.instance) not in baseline_keys and _varies(s.values)
    ]
    out = []
    for series in incident:
        successors = [
            f
            for f in fresh
            if series.instance is not None
            and f.name == series.name
            and f.instance != series.instance
            and same_stream(series, f)
        ]
        if successors:
            cut = min(float(np.nanmin(f.timestamps[np.isfinite(f.values)])) for f in successors)
            series = series.within(TimeWindow(min(float(series.timestamps.min(initial=cut)), cut), cut))
        out.append(series)
    return out


def stuck_at_zero(*parts: FloatArray) -> bool:
    """Whether every finite value of every part is 0."""
    values = np.concatenate(parts)
    finite = values[np.isfinite(values)]
    return bool(finite.size) and not finite.any()


def never_succeeds(kind: tuple[Family, Direction], unit: str, *parts: FloatArray) -> bool:
    """Whether a share of requests reads total failure throughout (a success rate of 0, a failure share,
    unit "1", of 1) in every part: a collector that does not measure success (Nezha's pod success rates,
    a status mapping that counts every response as failed) rather than a service that served nothing
    right in its baseline and kept its traffic; either way the series cannot move, and its steady 0 z
    would count as a quiet peer of the entity that does deviate."""
    if kind == (Family.ERRORS, Direction.DOWN):
        return stuck_at_zero(*parts)
    if failure_share(kind, unit):
        return stuck_at_zero(*(1.0 - p for p in parts))  # a failure share of 1 is a success share of 0
    return False


def _varies(values: FloatArray) -> bool:
    finite = values[np.isfinite(values)]
    return finite.size > 1 and float(np.ptp(finite)) > 0.0


def median_of(values: FloatArray) -> FloatArray:
    """The median of the finite values as a one-point window (empty when there are none)."""
    finite = values[np.isfinite(values)]
    return np.array([np.median(finite)]) if finite.size else finite


def requests_per_sample(series: list[MetricSeries], window: TimeWindow) -> dict[str | None, float]:
    """The median number of requests behind one sample in `window`, per instance (None: the entity's
    own series), from its traffic series; a rate per second is multiplied by the sampling interval.

    A traffic series at 0 throughout (every period it was fetched for) says nothing about the volume: an
    entity whose latency percentiles or rates are measured served requests, so a counter that never
    left 0 is a collector that does not count them (as a success rate stuck at 0 is one that does not
    measure it), and the volume stays unknown."""
    out: dict[str | None, float] = {}
    for s in series:
        if family_of(s.name) != (Family.TRAFFIC, Direction.BOTH) or stuck_at_zero(s.values):
            continue
        inside = s.within(window)
        finite = inside.values[np.isfinite(inside.values)]
        if not finite.size:
            continue
        step = float(np.median(np.diff(s.timestamps))) if s.timestamps.size > 1 else 1.0
        count = float(np.median(finite)) * (step if s.unit.endswith("/s") else 1.0)
        out[s.instance] = max(out.get(s.instance, 0.0), count)
    return out


def low_volume(series: list[MetricSeries], window: TimeWindow) -> bool:
    """Whether the entity's request volume in `window` is too small for its rates to mean anything."""
    volumes = requests_per_sample(series, window)
    return bool(volumes) and max(volumes.values()) < MIN_REQUESTS_FOR_RATES


_QUANTILE = re.compile(r"p(\d{2,3})$")


def too_few_for_quantile(name: str, requests: float | None) -> bool:
    """Whether a latency quantile (`..._p99`) rests on too few requests per sample to say anything about
    the entity. Unknown volume keeps it.

    Two bounds. Its tail must hold a request (p99 needs 100 requests, p90 10), else it is the slowest
    request and follows single slow requests and histogram bucket boundaries. And the quantile is the
    value a share q of the requests fall under: that share is a rate over the same requests, noise below
    `MIN_REQUESTS_FOR_RATES` as any other rate (a median of two or three requests a minute is one
    request's latency, and it hops with every slow one)."""
    q = quantile_level(name)
    if q is None or requests is None:
        return False
    return requests * (1.0 - q) < 1.0 or requests < MIN_REQUESTS_FOR_RATES


def quantile_volume(values: FloatArray, requests: float | None) -> float | None:
    """The requests behind one point of a quantile series with `values` (its points in the window),
    given `requests` per sample of its entity's traffic; None when unknown.

    A quantile over one sample's requests has a value only at the samples that hold a request: with
    fewer than one request per sample, under Poisson arrivals a share 1 - exp(-requests) of them. A
    series with values at more samples than that is computed over a window longer than one sample (an
    exporter's sliding window, as behind a 1-second series of a service serving a request every few
    seconds), and the requests behind each of its points are unknown."""
    if requests is None or requests >= 1.0 or not values.size:
        return requests
    reported = float(np.isfinite(values).mean())
    return None if reported > 1.0 - math.exp(-requests) else requests


# A resource family (CPU, memory) is taken as it is, with no callee to net out: only its lead over
# every other entity separates a fault from the incident's background churn, so it needs a clearer one.
RESOURCE_DOMINANCE = 3.0


def dominance_for(family: Family) -> float:
    """The lead over the runner-up a family needs before its deviation can prove an origin."""
    return DOMINANCE if family in PROPAGATING else RESOURCE_DOMINANCE


def origin_score(
    own: float,
    noise: float,
    lead: float,
    decisive: bool,
    uncleared: bool = False,
    dominance: float = DOMINANCE,
) -> float:
    """Anomaly score of an own deviation relative to the incident's noise floor.

    Only an entity that did not move refutes, and only where its metrics could have shown the fault
    (`uncleared`: a burst of its own errors, a new version that never reported, or a family whose calm
    clears nothing leave that unknown). One that moved but no more than its peers, that another entity
    matches (contested), or whose deviation cannot be decisive (see `MetricsTool.run`) stays
    inconclusive: the metrics cannot tell.
    """
    return supported(unrefuted(squash(own / noise), own >= KNEE or uncleared), decisive, lead, dominance)
