"""Traces analysis, pure functions over the span frame: per-service latency and error attribution that
separates a service's own share from its callees'.

One pass over the window's spans serves every service:

- own (self) time of every span: its duration minus the union of its children's intervals (clipped
  to the span), so a caller that waits on a slow callee keeps its own time; the origin of a slowdown
  is the service whose own time rose;
- own error spans: spans in error (status ERROR, an `error` attribute or an HTTP status >= 500) none
  of whose children is in error: the error started there;
- call structure: how many child calls each operation makes per span (a thrown exception or a changed
  return value cuts a code path short, or sends it elsewhere) and how many calls a service receives.

Each measure is compared between the reference and the observed period (the same choice of reference
as the logs tool, see `rca.tools.counts`) per operation, and turned into a z-like score
against the other services (so that the load generator's mix, which moves every service, is not a
fault). Structure and errors propagate to callers, so a service is credited only with what its worst
callee does not already show, as metrics' `own_z` does; own time needs no such discount.

A delay on the network between two services is no one's own time: it shows as the gap between the
caller's span of the call and the callee's span of serving it (a *link*: a span of the caller's,
inside another of its own, whose only child is the callee's span, as an OpenTelemetry CLIENT span).
A link's gap is therefore left out of the caller's own time and measured per call edge instead. A
delay on one service's network (packets it sends or receives) widens the gaps of every call edge
into it and out of it, so a service is credited with the smaller of its incoming and its outgoing
edges' median gap rise: a caller whose only widened edge is the one to the delayed service keeps its
other side's, and is no origin. A service with one side only (a leaf, an entry) is credited with
that side's rise less what the services at the other ends of its edges are credited with: a leaf
whose caller's network is late waits on it (`_link_shifts`).

A delay often reaches only some of an operation's requests: those of one caller (a slow link from
it, a code path only its requests take). The operation's median own time does not move while they are
a minority, so own time is also compared per call site (operation, calling service and the calling
span's operation): the rise of the site's median own time above the operation's normal period (the
higher of `DISCOVERY_SIGMA` standard errors of the median's change and the operation's largest own
time in the reference), so that neither the scatter of a handful of requests nor the drift of a
heavy-tailed operation between recordings counts. A whole-entity delay moves every site.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rca.telemetry.model import DependencyGraph
from rca.tools.counts import Comparison, ReferenceKind, lead, robust_peer_z
from rca.tools.faults import FaultKind
from rca.tools.spans import EPSILON, LATENCY_FLOOR, MIN_SPANS, entity_mean
from rca.tools.stats import DISCOVERY_SIGMA, MAD_TO_SIGMA, squash, supported

# A call site's median is compared from three spans per period on: a median one outlier cannot move.
MIN_SITE_SPANS = 3
# The standard error of a median is sqrt(pi / 2) times the mean's (large samples, normal data).
MEDIAN_SE = math.sqrt(math.pi / 2.0)
# Floors of the peer spreads (the own-time shift's, `LATENCY_FLOOR`, is in `rca.tools.spans`): a
# child-count change under ~10 % and a call-rate change under ~20 % never stand out, however quiet the
# other services are.
STRUCTURE_FLOOR = 0.1
CALLS_FLOOR = 0.2
# Calls received move with the load generator's mix; only a collapse (under ~1/3 of the expected
# rate) counts as a sign that callers gave up on a service.
CALLS_COLLAPSE = -1.0


@dataclass
class TraceProfile:
    """One service's span measures, reference vs observed, and its origin-aware score."""

    entity: str
    reference_kind: ReferenceKind
    spans_reference: int = 0
    spans_observed: int = 0
    own_p50_reference: float = 0.0  # seconds
    own_p50_observed: float = 0.0
    own_p90_reference: float = 0.0
    own_p90_observed: float = 0.0
    own_shift: float = 0.0  # median log own-time change per operation (log units)
    site_shift: float = 0.0  # the largest call site's own-time rise, at its lower bound (log units)
    site: str | None = None  # that call site: the calling service (and its span's operation)
    site_caller: str | None = None  # that site's calling service (None for roots)
    link_shift: float = 0.0  # how far the wire gaps of its call edges widened (log units, `_link_shifts`)
    structure_shift: float = 0.0  # mean |log child-count change| per operation
    calls_change: float = 0.0  # log change of calls received per minute
    errors_reference: int = 0  # own error spans
    errors_observed: int = 0
    latency_z: float = 0.0
    structure_z: float = 0.0
    calls_z: float = 0.0
    errors_z: float = 0.0
    raw: float = 0.0
    own: float = 0.0
    inherited_from: str | None = None

    @property
    def kind(self) -> FaultKind | None:
        """The fault kind the strongest own measure points to."""
        if self.own < 3.0:
            return None
        if self.latency_z >= max(self.structure_z, self.errors_z):
            return FaultKind.LATENCY
        return FaultKind.ERRORS


@dataclass
class TraceAnalysis:
    """Every service's profile for one investigation."""

    comparison: Comparison
    profiles: dict[str, TraceProfile]
    outcomes_recorded: bool = False  # whether any span says how it ended: without, errors are unseen

    def score(self, entity: str) -> float:
        """Anomaly score of the service's own trace signal: inconclusive at most when it rests on a
        comparison with other services instead of its own past, or another service matches it."""
        p = self.profiles.get(entity)
        if p is None:
            return 0.0
        own_past = self.comparison.kind is not ReferenceKind.PEERS and p.spans_reference >= MIN_SPANS
        ahead = lead({e: q.own for e, q in self.profiles.items()}, entity)
        return supported(squash(p.own), own_past, ahead)


def self_times(frame: pd.DataFrame) -> pd.DataFrame:
    """Add `own` (duration minus the union of child intervals), `children`, `caller` (the parent's
    entity, None for roots) and `own_error` to a span frame (vectorised)."""
    out = frame.copy()
    duration = (out["end"] - out["start"]).clip(lower=0.0)
    parents = out[["span_id", "start", "end", "entity", "error"]].rename(
        columns={
            "span_id": "parent",
            "start": "p_start",
            "end": "p_end",
            "entity": "p_entity",
            "error": "p_error",
        }
    )
    kids = out[["parent", "start", "end", "error"]].dropna(subset=["parent"]).merge(parents, on="parent")
    # Children clipped to their parent, merged per parent by a running maximum of ends.
    kids["s"] = kids["start"].clip(lower=kids["p_start"], upper=kids["p_end"])
    kids["e"] = kids["end"].clip(lower=kids["p_start"], upper=kids["p_end"])
    kids = kids.sort_values(["parent", "s", "e"], kind="stable")
    running = kids.groupby("parent", sort=False)["e"].cummax()
    previous = running.groupby(kids["parent"], sort=False).shift(1).fillna(-np.inf)
    kids["covered"] = (kids["e"] - np.maximum(kids["s"], previous)).clip(lower=0.0)
    covered = kids.groupby("parent")["covered"].sum()
    n_children = kids.groupby("parent").size()
    child_error = kids.groupby("parent")["error"].any()
    out["own"] = (duration - out["span_id"].map(covered).fillna(0.0)).clip(lower=0.0)
    out["children"] = out["span_id"].map(n_children).fillna(0).astype(np.int64)
    out["own_error"] = out["error"] & ~out["span_id"].map(child_error).fillna(False).astype(bool)
    caller = out["parent"].map(parents.set_index("parent")["p_entity"])
    out["caller"] = caller.where(caller.notna(), None)
    return out


def _with_log_own(part: pd.DataFrame) -> pd.DataFrame:
    """`part` with its spans' log own time (`EPSILON` added: sub-0.1 ms is noise)."""
    return part.assign(log_own=np.log(part["own"] + EPSILON))


def _with_links(spans: pd.DataFrame) -> pd.DataFrame:
    """Add `link` and `callee` to a `self_times` frame. A link is a service's span of one outgoing
    call: it runs inside another span of the same service, and its only child is the callee's span
    of serving the call (an OpenTelemetry CLIENT span and its SERVER child); its own time is the gap
    between the two. A span that serves a request and calls out from it does its own work as well."""
    served = spans.loc[spans["caller"].notna() & (spans["caller"] != spans["entity"]), ["parent", "entity"]]
    callee = served.drop_duplicates("parent").set_index("parent")["entity"]
    out = spans.assign(callee=spans["span_id"].map(callee))
    inner = out["caller"] == out["entity"]
    return out.assign(link=inner & (out["children"] == 1) & out["callee"].notna())


def _link_shifts(ref: pd.DataFrame, obs: pd.DataFrame) -> dict[str, float]:
    """Per service, how far the gaps of its call edges widened (log change of each edge's median gap,
    `MIN_SPANS` calls per period): the smaller of the median over its incoming edges and the median
    over its outgoing edges; for a service with one side only, that side's less the most any service
    at the other end of its edges is credited with on both its sides. Only rises count."""

    def gaps(part: pd.DataFrame) -> pd.DataFrame:
        links = part[part["link"]]
        return links.groupby(["entity", "callee"])["own"].agg(["size", "median"])

    both = gaps(ref).add_suffix("_ref").join(gaps(obs).add_suffix("_obs"), how="inner")
    both = both[(both["size_ref"] >= MIN_SPANS) & (both["size_obs"] >= MIN_SPANS)]
    if both.empty:
        return {}
    ratio = (both["median_obs"] + EPSILON) / (both["median_ref"] + EPSILON)
    rise = ratio.apply(math.log).clip(lower=0.0)
    outgoing = rise.groupby(level="entity").median()
    incoming = rise.groupby(level="callee").median()
    sides = pd.concat([incoming.rename("in"), outgoing.rename("out")], axis=1)
    credit = {str(e): float(v) for e, v in sides.dropna().min(axis=1).items()}
    two_sided = dict(credit)
    edges = [(str(a), str(b)) for a, b in rise.index]
    # A service seen on one side only (a leaf, an entry) shares each of its edges with a service at
    # the other end: what that service's own widening (on both its sides) accounts for is not its.
    for e, row in sides[sides.isna().any(axis=1)].iterrows():
        leaf = pd.notna(row["in"])
        others = [a for a, b in edges if b == e] if leaf else [b for a, b in edges if a == e]
        one = float(row["in"] if leaf else row["out"])
        credit[str(e)] = one - max((two_sided.get(o, 0.0) for o in others), default=0.0)
    return {e: v for e, v in credit.items() if v > 0.0}


def _per_operation(ref: pd.DataFrame, obs: pd.DataFrame) -> pd.DataFrame:
    """Per (entity, operation): median log own time and mean child count in both periods."""

    def agg(part: pd.DataFrame) -> pd.DataFrame:
        return (
            _with_log_own(part)
            .groupby(["entity", "name"])
            .agg(n=("own", "size"), log_own=("log_own", "median"), children=("children", "mean"))
        )

    both = agg(ref).add_suffix("_ref").join(agg(obs).add_suffix("_obs"), how="inner")
    return both[(both["n_ref"] >= MIN_SPANS) & (both["n_obs"] >= MIN_SPANS)]


def _site_shifts(ref: pd.DataFrame, obs: pd.DataFrame) -> dict[str, tuple[float, str, str | None]]:
    """Per entity: the largest rise of a call site's median log own time above what the operation's
    normal period allows, and that site. Allowed is the higher of the site's reference median plus
    `DISCOVERY_SIGMA` standard errors of the difference of two medians, and the operation's largest
    own time in the reference (its normal tail: a heavy-tailed operation such as a database query
    drifts between recordings by as much as its tail reaches, and that is no delay).

    A call site is an operation of the entity as reached from one calling span (its service and
    operation; roots form their own site). The spread is the operation's own, over all its reference
    spans (a site's few spans cannot estimate one), and never under `LATENCY_FLOOR`."""
    ref, obs = _with_log_own(ref), _with_log_own(obs)
    op = ref.groupby(["entity", "name"])["log_own"]
    # Each operation's MAD, vectorised (no Python call per group).
    mad = (ref["log_own"] - op.transform("median")).abs().groupby([ref["entity"], ref["name"]]).median()
    enough = op.size() >= MIN_SPANS
    spread = (mad * MAD_TO_SIGMA).clip(lower=LATENCY_FLOOR)[enough].rename("spread")
    ceiling = op.max()[enough].rename("ceiling")
    keys = ["entity", "name", "caller", "site"]

    def agg(part: pd.DataFrame) -> pd.DataFrame:
        return part.groupby(keys, dropna=False)["log_own"].agg(["size", "median"])

    both = agg(ref).add_suffix("_ref").join(agg(obs).add_suffix("_obs"), how="inner")
    both = both[(both["size_ref"] >= MIN_SITE_SPANS) & (both["size_obs"] >= MIN_SITE_SPANS)]
    both = both.join(spread, on=["entity", "name"], how="inner").join(ceiling, on=["entity", "name"])
    if both.empty:
        return {}
    error = MEDIAN_SE * both["spread"] * np.sqrt(1.0 / both["size_ref"] + 1.0 / both["size_obs"])
    floor = np.maximum(both["median_ref"] + DISCOVERY_SIGMA * error, both["ceiling"])
    bound = both["median_obs"] - floor
    out: dict[str, tuple[float, str, str | None]] = {}
    ordered = bound.sort_values(ascending=False, kind="stable")
    levels = [ordered.index.get_level_values(k) for k in keys]
    for entity, name, caller, site, value in zip(*levels, ordered.to_numpy(), strict=True):
        if str(entity) not in out:
            by = caller if isinstance(caller, str) else None
            where = f"{name} from {caller}" if by else f"{name} (root)"
            out[str(entity)] = (float(value), where if not isinstance(site, str) else f"{where} {site}", by)
    return out


def _entries(part: pd.DataFrame) -> pd.Series:
    """Spans per service whose caller is another service (or none): the calls it receives."""
    return part[part["caller"] != part["entity"]].groupby("entity").size().astype(np.float64)


def profile_spans(
    frame: pd.DataFrame, cmp: Comparison, entities: Iterable[str], graph: DependencyGraph
) -> TraceAnalysis:
    """Profile every service's spans (`rca.tools.spans` frame) for `entities` and the frame's own."""
    names = sorted({*entities, *frame["entity"].unique()})
    profiles = {e: TraceProfile(e, cmp.kind) for e in names}
    result = TraceAnalysis(cmp, profiles)
    if frame.empty:
        return result
    result.outcomes_recorded = bool(frame["outcome"].any())
    spans = self_times(frame.drop_duplicates("span_id"))
    spans["site"] = spans["parent"].map(spans.set_index("span_id")["name"])
    spans = _with_links(spans)
    obs_w = cmp.observed
    ref, obs = cmp.split(spans, "start")
    _describe(profiles, ref, obs)
    if cmp.reference is not None:
        ops = _per_operation(ref[~ref["link"]], obs[~obs["link"]])
        weight = ops["n_obs"].astype(np.float64).pow(0.5)
        own_shift = entity_mean(ops["log_own_obs"] - ops["log_own_ref"], weight)
        # A delay on a service's network is its own, though no span of its own measures it.
        links = _link_shifts(ref, obs)
        for e, shift in links.items():
            profiles[e].link_shift = shift
        own_shift = pd.concat([own_shift, pd.Series(links, dtype=np.float64)], axis=1).max(axis=1)
        sites = _site_shifts(ref[~ref["link"]], obs[~obs["link"]])
        for e, (bound, site, by) in sites.items():
            profiles[e].site_shift, profiles[e].site, profiles[e].site_caller = bound, site, by
        # A call site's rise is the entity's own-time shift when it says more than the median over all
        # its requests does (a delay that reaches one caller's requests only).
        lifted = {e: b for e, (b, _, _) in sites.items() if b > 0.0}
        own_shift = pd.concat([own_shift, pd.Series(lifted, dtype=np.float64)], axis=1).max(axis=1)
        children = (ops["children_obs"] + 0.5) / (ops["children_ref"] + 0.5)
        structure = entity_mean(children.apply(math.log).abs(), weight)
        # Calls received from other services per minute (entries into the service).
        entries_obs, entries_ref = _entries(obs), _entries(ref)
        scale = obs_w.seconds / cmp.reference.seconds
        expected = entries_ref.reindex(entries_obs.index).fillna(0.0) * scale
        calls = ((entries_obs + 1.0) / (expected + 1.0)).apply(math.log)
        _scores(profiles, own_shift, structure, calls)
        for p in profiles.values():
            p.errors_z = (p.errors_observed - p.errors_reference * scale) / np.sqrt(
                p.errors_reference * scale + 1.0
            )
    else:
        # No reference: own-time level and error share against the other services.
        level = obs.assign(log_own=np.log(obs["own"] + EPSILON)).groupby("entity")["log_own"].median()
        for e, z in robust_peer_z(_as_dict(level), LATENCY_FLOOR).items():
            profiles[e].latency_z = z
        errs = obs.groupby("entity")["own_error"].mean()
        for e, z in robust_peer_z(_as_dict(errs), 0.01).items():
            profiles[e].errors_z = z
    _attribute(graph, profiles)
    return result


def _describe(profiles: dict[str, TraceProfile], ref: pd.DataFrame, obs: pd.DataFrame) -> None:
    for part, suffix in ((ref, "reference"), (obs, "observed")):
        if part.empty:
            continue
        stats = part.groupby("entity").agg(n=("own", "size"), errors=("own_error", "sum"))
        own = part[~part["link"]].groupby("entity")["own"]
        stats = stats.join(own.median().rename("p50")).join(own.quantile(0.9).rename("p90")).fillna(0.0)
        for e, row in stats.iterrows():
            p = profiles[str(e)]
            setattr(p, f"spans_{suffix}", int(row["n"]))
            setattr(p, f"own_p50_{suffix}", float(row["p50"]))
            setattr(p, f"own_p90_{suffix}", float(row["p90"]))
            setattr(p, f"errors_{suffix}", int(row["errors"]))


def _as_dict(values: pd.Series) -> dict[str, float]:
    return {str(k): float(v) for k, v in values.items()}


def _scores(
    profiles: dict[str, TraceProfile], own_shift: pd.Series, structure: pd.Series, calls: pd.Series
) -> None:
    for e, v in own_shift.items():
        profiles[str(e)].own_shift = float(v)
    for e, v in structure.items():
        profiles[str(e)].structure_shift = float(v)
    for e, v in calls.items():
        profiles[str(e)].calls_change = float(v)
    for e, z in robust_peer_z(_as_dict(own_shift), LATENCY_FLOOR).items():
        profiles[e].latency_z = z
    for e, z in robust_peer_z(_as_dict(structure), STRUCTURE_FLOOR).items():
        profiles[e].structure_z = z
    # A service that suddenly receives far fewer calls (its callers gave up on it, or it is down).
    for e, z in robust_peer_z({k: -v for k, v in _as_dict(calls).items()}, CALLS_FLOOR).items():
        profiles[e].calls_z = z if profiles[e].calls_change <= CALLS_COLLAPSE else 0.0


def _attribute(graph: DependencyGraph, profiles: dict[str, TraceProfile]) -> None:
    """Raw and own scores: structure, calls and errors net of the worst callee's (they propagate up)."""
    for p in profiles.values():
        p.raw = max(0.0, p.latency_z, p.structure_z, p.errors_z, p.calls_z)
    for e, p in profiles.items():
        propagating = max(0.0, p.structure_z, p.errors_z, p.calls_z)
        callees = [
            (max(0.0, profiles[c].structure_z, profiles[c].errors_z), c)
            for c in graph.callees(e)
            if c in profiles and c != e
        ]
        inherited, culprit = max(callees, default=(0.0, None))
        p.own = max(0.0, p.latency_z, propagating - inherited)
        p.inherited_from = culprit if inherited > 0 and p.own < p.raw else None


def own_time_z(analysis: TraceAnalysis) -> dict[str, float]:
    """How far each service's own span time moved against its own past, for the services that have
    enough spans in both periods to say (none when the comparison is with other services)."""
    if analysis.comparison.kind is ReferenceKind.PEERS:
        return {}
    return {
        e: p.latency_z
        for e, p in analysis.profiles.items()
        if min(p.spans_reference, p.spans_observed) >= MIN_SPANS
    }


def delayed_callers(analysis: TraceAnalysis) -> dict[str, str]:
    """Per service whose own time rose at one call site beyond its normal period, the other service
    that call site's requests came from: the caller a delay in it travelled up through."""
    return {
        e: p.site_caller
        for e, p in analysis.profiles.items()
        if p.site_shift > 0.0 and p.site_caller is not None and p.site_caller != e
    }
