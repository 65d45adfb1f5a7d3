"""Metrics profiles: per-entity, per-family deviation from the pre-incident baseline, read through the
investigation's context once and cached, and the origin questions asked of them.

The origin question for a propagating family (latency, errors) is whether an entity's deviation is
its own or inherited: a caller's latency rises when its callee slows down. An entity is therefore
credited only with the part of its deviation that its most deviating callee does not already show.
Resource families (CPU, memory) are the entity's own and are taken as they are. Each profile records
the series it examined (`rca.tools.facts`), for the explorer.
"""

from __future__ import annotations

from dataclasses import replace

import networkx as nx
import numpy as np

from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import Direction, FloatArray, MetricSeries, TimeWindow, split_edge_name
from rca.tools.base import ToolContext
from rca.tools.facts import ExaminedSeries
from rca.tools.faults import FaultKind, named_symptom
from rca.tools.graph import is_view
from rca.tools.metrics.analysis import (
    MAX_SEQUENTIAL_CALLS,
    PROPAGATING,
    FamilyFinding,
    MetricProfile,
    callers_wait,
    client_of,
    handed_over,
    inherited_from,
    low_volume,
    median_of,
    never_succeeds,
    quantile_volume,
    requests_per_sample,
    stock_deviation,
    stock_movement,
    too_few_for_quantile,
    waited_callee,
    waited_z,
    went_silent,
)
from rca.tools.span_metrics import duration_z
from rca.tools.stats import (
    KNEE,
    SUSTAINED_SAMPLES,
    Deviation,
    Family,
    beyond_normal,
    change_point,
    deviation,
    deviation_from,
    ended_episodes,
    family_of,
    floor_for,
    outside_episodes,
    peak_z,
    reference_floor,
)
from rca.tools.stats import WINDOW_QUANTILE as WINDOW_Q


def _series(ctx: ToolContext, entity: str) -> tuple[list[MetricSeries], list[MetricSeries]]:
    span = TimeWindow(min(ctx.baseline.start, ctx.incident.start), ctx.incident.end)
    everything = ctx.source.metrics(entity, span)
    if ctx.baseline.end <= ctx.incident.start:
        return everything, everything
    # The baseline lies elsewhere (a separate normal recording): fetch it on its own.
    return everything, ctx.source.metrics(entity, ctx.baseline)


def before_onset(ctx: ToolContext) -> TimeWindow | None:
    """The part of the incident window before the alert fired (None when the window starts at onset)."""
    end = min(ctx.onset, ctx.incident.end)
    return TimeWindow(ctx.incident.start, end) if end > ctx.incident.start else None


def baseline_adjoins(ctx: ToolContext) -> bool:
    """Whether the baseline runs up to the incident window (one recording), rather than lying apart
    from it (a separate normal recording, or a gap nothing was read in)."""
    return ctx.baseline.start < ctx.incident.start <= ctx.baseline.end


def _stock_deviation(
    ctx: ToolContext, dev: Deviation, baseline: FloatArray, window: FloatArray, direction: Direction
) -> Deviation:
    """A stock's deviation: read at its latest level (`stock_deviation`), and counted only as far as it
    moved within the window when the baseline lies apart from the window (`stock_movement`)."""
    dev = stock_deviation(dev, baseline, window, direction)
    return dev if baseline_adjoins(ctx) else stock_movement(dev, window)


# The symptom must deviate this many times the noise knee after onset to time it: an alert metric
# barely above noise does not say when the symptom appeared.
CLEAR = 2.0


def symptom_quiet_before_onset(ctx: ToolContext) -> bool:
    """Whether the alert's own metric was normal before onset (its median there, as for the entities
    judged against it) and clearly deviated from onset on: then the part of
    the incident window before onset is a time when the symptom did not exist yet. False when the alert
    names no metric or its series does not show that (the fault may have begun well before the alert,
    or the alert's metric may not time the symptom at all)."""
    key = "metrics.symptom_quiet"
    cached = ctx.cache.get(key)
    if isinstance(cached, bool):
        return cached
    pre, quiet = before_onset(ctx), False
    kind = family_of(ctx.alert.metric or "")
    if pre is not None and kind is not None:
        after = TimeWindow(pre.end, ctx.incident.end)
        incident_series, baseline_series = _series(ctx, ctx.alert.entity)
        bases = {(s.name, s.instance): s.within(ctx.baseline) for s in baseline_series}
        for s in incident_series:
            base = bases.get((s.name, s.instance))
            if s.name != ctx.alert.metric or base is None:
                continue
            floor = floor_for(kind[0])
            before = deviation_from(base, median_of(s.within(pre).values), kind[1], floor)
            since = deviation_from(base, s.within(after).values, kind[1], floor)
            if before is not None and since is not None and before.z < KNEE and since.z >= CLEAR * KNEE:
                quiet = True
    ctx.cache[key] = quiet
    return quiet


def _net_of_pre_onset(
    dev: Deviation, series: MetricSeries, ctx: ToolContext, direction: Direction
) -> tuple[Deviation, bool]:
    """The deviation net of the level the series already held before onset, and whether it reported then.

    Temporal precedence: a level the entity already held while the symptom was still normal did not
    cause it (nor is it its effect), so only what the entity added beyond it counts. This needs the
    symptom known to be quiet before onset (an alert may fire long after its fault began). The
    pre-onset median is used, so a fault starting shortly before the alert still counts in full.
    """
    pre = before_onset(ctx)
    if pre is None:
        return dev, True
    values = series.within(pre).values
    values = values[np.isfinite(values)]
    if not values.size:
        return dev, False
    if not symptom_quiet_before_onset(ctx):
        return dev, True
    level = float(np.median(values))
    return replace(dev, z=min(dev.z, dev.excess_over(level, direction))), True


def calm_before_onset(ctx: ToolContext) -> FloatArray:
    """The moments of the incident window before onset at which the alerting entity was calm: none of
    its latency and error series beyond normal (`beyond_normal`), at least one of them reporting."""
    key = "metrics.calm"
    cached = ctx.cache.get(key)
    if isinstance(cached, np.ndarray):
        return cached
    pre, disturbed = before_onset(ctx), dict[float, bool]()
    if pre is not None:
        incident_series, baseline_series = _series(ctx, ctx.alert.entity)
        bases = {(s.name, s.instance): s.within(ctx.baseline) for s in baseline_series}
        for s in incident_series:
            kind, base = family_of(s.name), bases.get((s.name, s.instance))
            if kind is None or kind[0] not in (Family.LATENCY, Family.ERRORS) or base is None:
                continue
            part = s.within(pre)
            beyond = beyond_normal(
                base.values, part.values, kind[1], floor_for(kind[0]), reference_floor(base)
            )
            if beyond is None:
                continue
            for t, v, out in zip(part.timestamps, part.values, beyond, strict=True):
                if np.isfinite(v):
                    disturbed[float(t)] = disturbed.get(float(t), False) or bool(out)
    calm = np.array(sorted(t for t, out in disturbed.items() if not out), dtype=float)
    ctx.cache[key] = calm
    return calm


def _set_aside_ended_episodes(
    ctx: ToolContext, base: MetricSeries, window: MetricSeries, family: Family, direction: Direction
) -> FloatArray:
    """The window's values without the points of episodes that were over before the incident began
    (`ended_episodes`): an earlier incident inside the window (faults that follow each other closely)
    is not this one's deviation, as one inside the baseline is not the entity's normal."""
    if before_onset(ctx) is None:
        return window.values  # the window starts at onset: nothing in it ended before
    finite = np.isfinite(window.values)
    beyond = beyond_normal(
        base.values, window.values[finite], direction, floor_for(family), reference_floor(base)
    )
    if beyond is None or not beyond.any():
        return window.values
    ended = ended_episodes(window.timestamps[finite], beyond, ctx.onset, calm_before_onset(ctx))
    if not ended.any():
        return window.values
    values = window.values.copy()
    values[np.flatnonzero(finite)[ended]] = np.nan
    return values


def _too_few_requests(window: MetricSeries, volumes: dict[str | None, float]) -> bool:
    """Whether a latency quantile series (its points in the incident window) rests on too few requests
    to say anything (its instance's traffic, else the entity's; see `too_few_for_quantile` and
    `quantile_volume`)."""
    volume = volumes.get(window.instance, volumes.get(None))
    return too_few_for_quantile(window.name, quantile_volume(window.values, volume))


def _record_burst(
    result: MetricProfile,
    family: Family,
    base: MetricSeries,
    window: MetricSeries,
    direction: Direction,
    resolution: float,
) -> None:
    """Keep the worst burst of an error series in `result.bursts`: the level it held for
    `SUSTAINED_SAMPLES` samples beyond its baseline outside that baseline's episodes. Only failures'
    bursts are read (`error_burst`), so other families are not measured."""
    if family is not Family.ERRORS:
        return
    normal = outside_episodes(base.values, direction, floor_for(family), resolution)
    burst = peak_z(normal, window.values, direction, floor_for(family), resolution, SUSTAINED_SAMPLES)
    result.bursts[family] = max(result.bursts.get(family, 0.0), burst)


def metric_profile(ctx: ToolContext, entity: str) -> MetricProfile:
    """The entity's metric profile, computed once per investigation."""
    key = f"metrics.profile.{entity}"
    cached = ctx.cache.get(key)
    if isinstance(cached, MetricProfile):
        return cached
    result = MetricProfile(entity)
    incident_series, baseline_series = _series(ctx, entity)
    baselines = {(s.name, s.instance): s.within(ctx.baseline) for s in baseline_series}
    known = {k for k, s in baselines.items() if np.isfinite(s.values).any()}
    volumes = requests_per_sample(incident_series, ctx.incident)
    examined: dict[tuple[str, str | None], MetricSeries] = {}
    cut = handed_over(incident_series, known)
    by_key = {(s.name, s.instance): s for s in cut}
    for series in cut:
        kind = family_of(series.name)
        base = baselines.get((series.name, series.instance))
        if kind is None or base is None:
            continue
        window = series.within(ctx.incident)
        if kind[0] is Family.LATENCY and _too_few_requests(window, volumes):
            continue
        if never_succeeds(kind, series.unit, base.values, series.values):
            continue  # a collector that does not measure success
        family, direction = kind
        resolution = reference_floor(base)
        shown = window
        window = replace(window, values=_set_aside_ended_episodes(ctx, base, window, family, direction))
        dev = deviation(base.values, window.values, direction, floor_for(family), resolution)
        if dev is None:
            continue
        if family is Family.MEMORY:
            dev = _stock_deviation(ctx, dev, base.values, window.values, direction)
        dev, anchored = _net_of_pre_onset(dev, window, ctx, direction)
        peak = peak_z(base.values, window.values, direction, floor_for(family), resolution)
        result.peaks[family] = max(result.peaks.get(family, 0.0), peak)
        _record_burst(result, family, base, window, direction, resolution)
        waited = 0.0
        if family is Family.LATENCY:
            waited = waited_z(dev, _client_wait(ctx, by_key, baselines, series))
        finding = FamilyFinding(
            family, series.name, series.instance, dev, None, anchored, series.unit, waited
        )
        result.series.setdefault(family, []).append(finding)
        best = result.findings.get(family)
        if best is None or dev.z > best.deviation.z:
            result.findings[family] = finding
            examined[family, series.instance] = shown
        per_instance = result.instances.setdefault(family, {})
        mine = per_instance.get(series.instance)
        if mine is None or dev.z > mine.deviation.z:
            per_instance[series.instance] = finding
    reported = [s.timestamps[np.isfinite(s.values)] for s in incident_series]
    result.last_report = max((float(t.max()) for t in reported if t.size), default=result.last_report)
    result.silence = went_silent(incident_series, baselines, ctx.incident, ctx.onset)
    _add_callers_wait(ctx, result, examined)
    if Family.ERRORS in result.findings and low_volume(incident_series, ctx.incident):
        del result.findings[Family.ERRORS]
        result.instances.pop(Family.ERRORS, None)
        result.series.pop(Family.ERRORS, None)
    ctx.record.series[entity] = tuple(
        examined_series(f, examined[f.family, f.instance]) for f in result.findings.values()
    )
    ctx.cache[key] = result
    return result


def _edge_waits(ctx: ToolContext, caller: str) -> dict[str, tuple[Deviation, MetricSeries]]:
    """The caller's client-side wait on each callee it measures per call edge (a `client_` latency
    series labelled `{caller=..,callee=..}`): the most deviating series per callee, with its deviation."""
    key = f"metrics.edge_waits.{caller}"
    cached = ctx.cache.get(key)
    if isinstance(cached, dict):
        return cached
    out: dict[str, tuple[Deviation, MetricSeries]] = {}
    incident_series, baseline_series = _series(ctx, caller)
    bases = {(s.name, s.instance): s.within(ctx.baseline) for s in baseline_series}
    for series in incident_series:
        callee = waited_callee(series.name, caller)
        base = bases.get((series.name, series.instance))
        if callee is None or base is None:
            continue
        seen = series.within(ctx.incident)
        values = _set_aside_ended_episodes(ctx, base, seen, Family.LATENCY, Direction.UP)
        dev = deviation_from(base, values, Direction.UP, floor_for(Family.LATENCY))
        if dev is not None and (callee not in out or dev.z > out[callee][0].z):
            out[callee] = (dev, seen)
    ctx.cache[key] = out
    return out


def _add_callers_wait(
    ctx: ToolContext, result: MetricProfile, examined: dict[tuple[str, str | None], MetricSeries]
) -> None:
    """Take the entity's latency as its callers see it (`callers_wait`) as its latency finding, with the
    caller's series it rests on, when it deviates more than the entity's own latency series: a delay
    between the entity and its callers shows only in what they wait."""
    entity, own = result.entity, result.findings.get(Family.LATENCY)
    edges = {c: _edge_waits(ctx, c) for c in ctx.graph.callers(entity) if c != entity}
    # A caller's wait on a callee that itself depends on the entity may be the entity's delay passed
    # on: only its other callees tell whether the caller waits on its own side.
    g = ctx.digraph
    independent = {
        c: {
            callee: d
            for callee, (d, _) in e.items()
            if callee == entity or callee not in g or entity not in g or not nx.has_path(g, callee, entity)
        }
        for c, e in edges.items()
    }
    found = callers_wait(independent, entity)
    if found is None or (own is not None and own.deviation.z >= found[1].z):
        return
    caller, dev = found
    series = edges[caller][entity][1]
    result.findings[Family.LATENCY] = FamilyFinding(
        Family.LATENCY, series.name, None, dev, None, True, series.unit
    )
    examined[Family.LATENCY, None] = series


def callers_see(ctx: ToolContext, entity: str) -> float | None:
    """How far the most waiting of the entity's callers' waits on it rose (z), when any caller measures
    its calls to it per edge (None otherwise)."""
    waits = [
        edges[entity][0].z
        for c in ctx.graph.callers(entity)
        if c != entity and entity in (edges := _edge_waits(ctx, c))
    ]
    return max(waits, default=None)


def unseen_by_callers(ctx: ToolContext, entity: str, family: Family) -> bool:
    """Whether a latency of the entity's own is one its callers do not wait on: they measure their calls
    to it per edge and none of those waits rose beyond noise. A delayed entity's callers wait longer by
    about its delay; a rise they do not wait on cannot be what they (and the symptom) suffer."""
    if family is not Family.LATENCY:
        return False
    seen = callers_see(ctx, entity)
    return seen is not None and seen < KNEE


def alert_symptom(ctx: ToolContext) -> Family | None:
    """The family the alert fired on: the one its metric names; for an alert that names no metric,
    errors when the alerting entity fails (its error family deviates past the knee, and further than its
    latency); None otherwise (no family is favoured, as for an alert on a family `EXPLAINS` does not
    know).

    A failing entry is explained by what fails its requests (a failing callee, a gone pod), a slower or
    busier service only in part (`EXPLAINS`). Latency is what an alert without a metric is taken to
    be about already (`symptom_family`, for seeding); failures are what the alert did not say."""
    if ctx.alert.metric:
        return named_symptom(ctx.alert.metric)
    prof = metric_profile(ctx, ctx.alert.entity)
    errors = prof.z(Family.ERRORS)
    return Family.ERRORS if errors >= KNEE and errors >= prof.z(Family.LATENCY) else None


def short_of_symptom(ctx: ToolContext, entity: str, finding: FamilyFinding) -> tuple[float, float] | None:
    """The entity's latency rise and the alerting entity's, when the first (times `MAX_SEQUENTIAL_CALLS`)
    is too small to account for the second; None when it is not, or the two cannot be compared (another
    family, the alerting entity itself, an alert on another family, a symptom that did not slow down,
    rises in different units)."""
    symptom = ctx.alert.entity
    if finding.family is not Family.LATENCY or entity == symptom or not finding.unit:
        return None
    named = family_of(ctx.alert.metric or "")
    if named is not None and named[0] is not Family.LATENCY:
        return None  # another symptom's size says nothing of how long a request waits
    theirs = metric_profile(ctx, symptom).findings.get(Family.LATENCY)
    if theirs is None or theirs.unit != finding.unit:
        return None
    mine, their = finding.deviation.rise, theirs.deviation.rise
    if their <= 0 or mine * MAX_SEQUENTIAL_CALLS >= their:
        return None
    return mine, their


def _client_wait(
    ctx: ToolContext,
    series_by_key: dict[tuple[str, str | None], MetricSeries],
    baselines: dict[tuple[str, str | None], MetricSeries],
    server: MetricSeries,
) -> Deviation | None:
    """The deviation of the client-side twin of a server latency series (same instance), if measured."""
    key = (client_of(server.name), server.instance)
    client, base = series_by_key.get(key), baselines.get(key)
    if client is None or base is None or client.unit != server.unit:
        return None
    return deviation_from(base, client.within(ctx.incident).values, Direction.UP, floor_for(Family.LATENCY))


def silent(ctx: ToolContext, entity: str) -> FamilyFinding | None:
    """The entity's zeroed-telemetry finding when its telemetry stopped at onset while another entity's
    kept coming past the time it would have missed `MISSED_SAMPLES` samples (else the collector, not
    the entity, went quiet); None otherwise."""
    found = metric_profile(ctx, entity).silence
    if found is None:
        return None
    others = (metric_profile(ctx, e).last_report for e in ctx.graph.names() if e != entity)
    return found.finding if max(others, default=-np.inf) >= found.overdue else None


def short_reference_z(ctx: ToolContext, entity: str, family: Family) -> float:
    """For series without a usable baseline (fewer points than a robust spread needs), how far the
    entity moved from its own few points before onset to its points after it, in units of their spread
    (at least the family's relative floor). A lead for ranking only: one or two reference points say too
    little about normal to prove anything, so the metrics tool never reads this."""
    key = f"metrics.short.{entity}"
    cached = ctx.cache.get(key)
    if not isinstance(cached, dict):
        cached = {}
        pre, post = before_onset(ctx), TimeWindow(ctx.onset, max(ctx.onset, ctx.incident.end))
        incident_series, baseline_series = _series(ctx, entity) if pre is not None else ([], [])
        usable = {
            (s.name, s.instance)
            for s in baseline_series
            if np.isfinite(s.within(ctx.baseline).values).sum() >= 3
        }
        for series in incident_series:
            kind = family_of(series.name)
            if kind is None or (series.name, series.instance) in usable or pre is None:
                continue
            ref = series.within(pre).values
            ref = ref[np.isfinite(ref)]
            after = series.within(post).values
            after = after[np.isfinite(after)]
            if not ref.size or not after.size:
                continue
            fam, direction = kind
            level = float(np.median(ref))
            # Flat at zero before onset (no traffic yet), the relative floor is taken on the level after
            # it, so that a series starting from nothing ranks as a large move, not an infinite one.
            scale = max(abs(level), abs(float(np.median(after))))
            resolution = reference_floor(series.within(pre))
            spread = max(float(np.ptp(ref)), floor_for(fam) * scale, resolution, 1e-9)
            high, low = float(np.quantile(after, WINDOW_Q)), float(np.quantile(after, 1 - WINDOW_Q))
            moved = {Direction.UP: high - level, Direction.DOWN: level - low}.get(
                direction, max(high - level, level - low)
            )
            cached[fam] = max(cached.get(fam, 0.0), max(0.0, moved) / spread)
        ctx.cache[key] = cached
    value = cached.get(family, 0.0)
    return float(value) if isinstance(value, float) else 0.0


def own_short_reference_z(ctx: ToolContext, entity: str, family: Family) -> float:
    """`short_reference_z` net of the strongest callee's, as `own_z` does for propagating families."""
    raw = short_reference_z(ctx, entity, family)
    if family not in PROPAGATING or raw <= 0:
        return raw
    inherited = [short_reference_z(ctx, c, family) for c in ctx.graph.callees(entity) if c != entity]
    return max(0.0, raw - max(inherited, default=0.0))


def onset_of(ctx: ToolContext, finding: FamilyFinding, entity: str) -> float | None:
    """When the finding's series changed (ruptures), looked up lazily: only suspects need it."""
    series = [
        s
        for s in ctx.source.metrics(entity, ctx.incident, names=[finding.metric])
        if s.instance == finding.instance
    ]
    if not series:
        return None
    return change_point(series[0].timestamps, series[0].values)


# The share of entities whose own deviation is taken as the incident's noise floor for a family.
PEER_QUANTILE = 0.5


def peer_noise(ctx: ToolContext, family: Family) -> float:
    """How much entities of this incident deviate in `family` anyway (at least 1): a distant or noisy
    baseline makes every entity deviate, and a deviation only means something above that floor."""
    key = f"metrics.noise.{family.value}"
    cached = ctx.cache.get(key)
    if isinstance(cached, float):
        return cached
    zs = [
        own_z(ctx, e, family)[0]
        for e in ctx.graph.names()
        if family in metric_profile(ctx, e).findings and not is_view(ctx.graph, e)  # a view repeats a peer
    ]
    noise = max(1.0, float(np.quantile(zs, PEER_QUANTILE))) if zs else 1.0
    ctx.cache[key] = noise
    return noise


def runner_up(ctx: ToolContext, entity: str, family: Family) -> tuple[float, str | None]:
    """The largest own deviation in `family` of any other component, and who it is. Views (client-side
    records of calls) are no rivals: they measure some component's calls, often this one's; nor is a
    component whose rise is too small to account for the symptom (`short_of_symptom`). A rival that
    seeding leaves out for another reason (`disqualified`: its callers do not wait on it, its spans do
    not show it) stays one: the rivalry asks whether the suspect's rise is unique, and where only span
    durations are kept a victim's rise is not told from an origin's (`docs/fault-signatures.md`, "A
    rival is a rival")."""
    others = [
        (own_z(ctx, e, family)[0], e)
        for e in ctx.graph.names()
        if e != entity and not is_view(ctx.graph, e) and not falls_short(ctx, e, family)
    ]
    return max(others, default=(0.0, None))


def disqualified(ctx: ToolContext, entity: str, family: Family) -> bool:
    """Whether the entity's deviation in `family` cannot be what the symptom suffers: a latency its
    spans do not show (`spans_disown`), one its callers do not wait on (`unseen_by_callers`), or one too
    small to account for the symptom (`falls_short`). Such a deviation does not seed its entity."""
    return (
        spans_disown(ctx, entity, family) is not None
        or unseen_by_callers(ctx, entity, family)
        or falls_short(ctx, entity, family)
    )


def falls_short(ctx: ToolContext, entity: str, family: Family) -> bool:
    """Whether the entity's finding in `family` is too small to account for the symptom."""
    finding = metric_profile(ctx, entity).findings.get(family)
    return finding is not None and short_of_symptom(ctx, entity, finding) is not None


def own_z(ctx: ToolContext, entity: str, family: Family) -> tuple[float, float, str | None]:
    """The entity's own deviation in `family`: (own z, raw z, the callee that explains the rest).

    What a callee's deviation accounts for is measured in the entity's units (`inherited_z`); for a
    server latency, so is the entity's own client-side wait on its callees (`FamilyFinding.waited`),
    which explains its rise even where the callee it waits on reports no latency of its own."""
    prof = metric_profile(ctx, entity)
    raw = prof.z(family)
    mine = prof.findings.get(family)
    if family not in PROPAGATING or mine is None:
        return raw, raw, None
    callees = [
        (inherited_from(mine, found, theirs.series.get(family, ())), c)
        for c in ctx.graph.callees(entity)
        if c != entity and (found := (theirs := metric_profile(ctx, c)).findings.get(family)) is not None
    ]
    inherited, culprit = max(callees, default=(0.0, None))
    inherited = max(inherited, mine.waited)
    if inherited <= 0:
        return raw, raw, None
    return max(0.0, raw - inherited), raw, culprit


def spans_disown(ctx: ToolContext, entity: str, family: Family) -> tuple[float, str] | None:
    """For latency, how far the entity's span time moved, and what measured it, when it stayed within
    noise (None otherwise). A server-side latency metric includes the time spent waiting on callees;
    spans separate the entity's own time, so a latency they do not show is not its own. Without spans,
    span metrics give each operation's duration (`duration_z`), its callees' time included: an entity
    none of whose operations slowed did not slow itself either."""
    if family is not Family.LATENCY:
        return None
    z = ctx.record.own_time_z.get(entity)
    if z is not None:
        return (z, "own span time") if z < KNEE else None
    z = duration_z(ctx).get(entity)
    if z is None or z >= KNEE:
        return None
    # A caller's record of its calls into the entity holds the network between them, which the entity's
    # spans do not time (the traces analysis measures it on the link; span metrics cannot).
    finding = metric_profile(ctx, entity).findings.get(family)
    if finding is not None and measured_by_caller(finding.metric, entity):
        return None
    return z, "span durations"


def measured_by_caller(name: str, entity: str) -> bool:
    """Whether a series of `entity` is another service's record of its calls into it (an edge series
    naming `entity` as the callee)."""
    _, caller, callee = split_edge_name(name)
    return callee == entity and caller is not None and caller != entity


def own_cause(ctx: ToolContext, hypothesis: Hypothesis) -> str | None:
    """Another kind of fault at the hypothesis's entity that explains its kind, in words; None if none.

    A change whose new version is demonstrably worse explains whatever it moved; a CPU or memory
    saturation above the incident's noise explains the entity's own latency and errors.
    """
    kind = FaultKind(hypothesis.fault_kind)
    if kind is not FaultKind.BAD_DEPLOY and ctx.record.changes.made_worse(hypothesis.entity):
        return "its own change made it worse"
    if kind in (FaultKind.LATENCY, FaultKind.ERRORS):
        for family in (Family.CPU, Family.MEMORY):
            z = own_z(ctx, hypothesis.entity, family)[0]
            if z >= KNEE * peer_noise(ctx, family):
                return f"its own {family.value} moved {z:.1f} sigma"
    return None


def error_burst(ctx: ToolContext, entity: str, sustained: bool = False) -> float:
    """The entity's own worst minute of errors beyond anything its baseline showed, net of the worst its
    callees show (a callee's burst reaches its callers too). `sustained`: the worst level held for
    `SUSTAINED_SAMPLES` samples beyond anything the baseline showed outside its episodes instead."""

    def worst(e: str) -> float:
        profile = metric_profile(ctx, e)
        return (profile.bursts if sustained else profile.peaks).get(Family.ERRORS, 0.0)

    mine = worst(entity)
    callees = [c for c in ctx.graph.callees(entity) if c != entity]
    theirs = [worst(c) for c in callees]
    return max(0.0, mine - max(theirs, default=0.0))


def worse_change_elsewhere(ctx: ToolContext, entity: str) -> list[str]:
    """Services connected to `entity` whose change shows more against it than `entity`'s own change does
    (its canary moved, or its new version never served), unless `entity`'s own change made it worse.

    Metrics name where a deviation shows, not why. While a change demonstrably went wrong somewhere in the
    application, a deviation that no change of the entity's own explains as well may be that change's
    doing through paths the call graph does not show (data a caller passes on from it, shared nodes),
    so the entity's metrics cannot prove it the origin."""
    changes = ctx.record.changes
    if not changes.entities or changes.made_worse(entity):
        return []
    g = ctx.digraph
    if entity not in g:
        return []
    mine = changes.scores().get(entity, 0.0)
    related = nx.node_connected_component(g.to_undirected(as_view=True), entity)
    return sorted(
        e
        for e, fact in changes.entities.items()
        if e != entity and e in related and fact.moved and fact.score > mine
    )


def examined_series(finding: FamilyFinding, window: MetricSeries) -> ExaminedSeries:
    """The fact of one examined series: its finite points in the incident window and its baseline."""
    finite = np.isfinite(window.values)
    dev = finding.deviation
    return ExaminedSeries(
        window.entity,
        window.name,
        window.instance,
        window.unit,
        finding.family.value,
        window.timestamps[finite],
        window.values[finite],
        dev.baseline,
        dev.spread,
        dev.z,
    )
