"""Traces: per-service latency and error attribution that separates a service's own share from its
callees'.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import SpanStatus, TimeWindow
from rca.tools.base import ToolContext, ToolResult
from rca.tools.counts import Comparison, Mode, fetch_compared, lead, robust_peer_z
from rca.tools.faults import FaultKind
from rca.tools.stats import squash, supported, unrefuted

CACHE_KEY = "traces.analysis"
FRAME_KEY = "traces.frame"
MAX_SPANS = 1_000_000
EPSILON = 1e-4  # seconds added before taking logs of own times (sub-0.1 ms is noise)
MIN_SPANS = 5  # an operation needs this many spans in both periods to be compared
# Floors of the peer spreads: an own-time shift under ~10 % (log units), a child-count change
# under ~10 % and a call-rate change under ~20 % never stand out, however quiet the other services are.
LATENCY_FLOOR = 0.1
STRUCTURE_FLOOR = 0.1
CALLS_FLOOR = 0.2
# Calls received move with the load generator's mix; only a collapse (under ~1/3 of the expected
# rate) counts as a sign that callers gave up on a service.
CALLS_COLLAPSE = -1.0


@dataclass
class TraceProfile:
    """One service's span measures, reference vs observed, and its origin-aware score."""

    entity: str
    mode: Mode
    spans_reference: int = 0
    spans_observed: int = 0
    own_p50_reference: float = 0.0  # seconds
    own_p50_observed: float = 0.0
    own_p90_reference: float = 0.0
    own_p90_observed: float = 0.0
    own_shift: float = 0.0  # median log own-time change per operation (log units)
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
        own_past = self.comparison.mode is not Mode.PEERS and p.spans_reference >= MIN_SPANS
        ahead = lead({e: q.own for e, q in self.profiles.items()}, entity)
        return supported(squash(p.own), own_past, ahead)


def _is_error(status: str, attributes: object) -> bool:
    if status == SpanStatus.ERROR.value:
        return True
    if not isinstance(attributes, dict) or not attributes:
        return False
    if attributes.get("error") in (True, "true", "True", 1):
        return True
    code = attributes.get("http.status_code", attributes.get("http.response.status_code"))
    try:
        return code is not None and int(code) >= 500
    except (TypeError, ValueError):
        return False


def _has_outcome(status: str, attributes: object) -> bool:
    """Whether a span records how its work ended (a status, an error flag or an HTTP status)."""
    if status != SpanStatus.UNSET.value:
        return True
    keys = ("error", "http.status_code", "http.response.status_code")
    return isinstance(attributes, dict) and any(k in attributes for k in keys)


def _frame(ctx: ToolContext, window: TimeWindow) -> pd.DataFrame:
    spans = ctx.source.spans(window, limit=MAX_SPANS)
    return pd.DataFrame(
        {
            "trace_id": [s.trace_id for s in spans],
            "span_id": [s.span_id for s in spans],
            "parent": [s.parent_span_id for s in spans],
            "entity": [s.entity for s in spans],
            "name": [s.name for s in spans],
            "start": np.array([s.start for s in spans], dtype=np.float64),
            "end": np.array([s.end for s in spans], dtype=np.float64),
            "error": [_is_error(s.status.value, dict(s.attributes)) for s in spans],
            "outcome": [_has_outcome(s.status.value, dict(s.attributes)) for s in spans],
        }
    )


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


def _per_operation(ref: pd.DataFrame, obs: pd.DataFrame) -> pd.DataFrame:
    """Per (entity, operation): median log own time and mean child count in both periods."""

    def agg(part: pd.DataFrame) -> pd.DataFrame:
        return (
            part.assign(log_own=np.log(part["own"] + EPSILON))
            .groupby(["entity", "name"])
            .agg(n=("own", "size"), log_own=("log_own", "median"), children=("children", "mean"))
        )

    both = agg(ref).add_suffix("_ref").join(agg(obs).add_suffix("_obs"), how="inner")
    return both[(both["n_ref"] >= MIN_SPANS) & (both["n_obs"] >= MIN_SPANS)]


def _entries(part: pd.DataFrame) -> pd.Series:
    """Spans per service whose caller is another service (or none): the calls it receives."""
    return part[part["caller"] != part["entity"]].groupby("entity").size().astype(np.float64)


def _weighted(values: pd.Series, weights: pd.Series) -> pd.Series:
    """Per-entity mean of `values` weighted by `weights` (index: entity, operation)."""
    num = (values * weights).groupby(level="entity").sum()
    return num / weights.groupby(level="entity").sum()


def span_frame(ctx: ToolContext) -> tuple[pd.DataFrame, Comparison]:
    """The investigation's spans (one row each: ids, entity, name, times, error and outcome flags)
    with their reference / observed comparison; fetched once per investigation (cached in `ctx.cache`)
    for every reader: this tool, and the logs tool that anchors its statement pairs on span starts."""
    cached = ctx.cache.get(FRAME_KEY)
    if isinstance(cached, tuple):
        return cached
    found = fetch_compared(ctx, lambda w: _frame(ctx, w), "start")
    ctx.cache[FRAME_KEY] = found
    return found


def analyse(ctx: ToolContext) -> TraceAnalysis:
    """Profile every service's spans once per investigation (cached in `ctx.cache`)."""
    cached = ctx.cache.get(CACHE_KEY)
    if isinstance(cached, TraceAnalysis):
        return cached
    frame, cmp = span_frame(ctx)
    entities = sorted({*ctx.graph.names(), ctx.alert.entity, *frame["entity"].unique()})
    profiles = {e: TraceProfile(e, cmp.mode) for e in entities}
    result = TraceAnalysis(cmp, profiles)
    ctx.cache[CACHE_KEY] = result
    if frame.empty:
        return result
    result.outcomes_recorded = bool(frame["outcome"].any())
    spans = self_times(frame.drop_duplicates("span_id"))
    obs_w = cmp.observed
    ref, obs = cmp.split(spans, "start")
    _describe(profiles, ref, obs)
    if cmp.reference is not None:
        ops = _per_operation(ref, obs)
        weight = ops["n_obs"].astype(np.float64).pow(0.5)
        own_shift = _weighted(ops["log_own_obs"] - ops["log_own_ref"], weight)
        children = (ops["children_obs"] + 0.5) / (ops["children_ref"] + 0.5)
        structure = _weighted(children.apply(math.log).abs(), weight)
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
    _attribute(ctx, profiles)
    return result


def _describe(profiles: dict[str, TraceProfile], ref: pd.DataFrame, obs: pd.DataFrame) -> None:
    for part, suffix in ((ref, "reference"), (obs, "observed")):
        if part.empty:
            continue
        stats = part.groupby("entity").agg(
            n=("own", "size"),
            p50=("own", "median"),
            p90=("own", lambda s: float(np.quantile(s, 0.9))),
            errors=("own_error", "sum"),
        )
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


def _attribute(ctx: ToolContext, profiles: dict[str, TraceProfile]) -> None:
    """Raw and own scores: structure, calls and errors net of the worst callee's (they propagate up)."""
    for p in profiles.values():
        p.raw = max(0.0, p.latency_z, p.structure_z, p.errors_z, p.calls_z)
    for e, p in profiles.items():
        propagating = max(0.0, p.structure_z, p.errors_z, p.calls_z)
        callees = [
            (max(0.0, profiles[c].structure_z, profiles[c].errors_z), c)
            for c in ctx.graph.callees(e)
            if c in profiles and c != e
        ]
        inherited, culprit = max(callees, default=(0.0, None))
        p.own = max(0.0, p.latency_z, propagating - inherited)
        p.inherited_from = culprit if inherited > 0 and p.own < p.raw else None


def trace_profile(ctx: ToolContext, entity: str) -> TraceProfile:
    """The service's trace profile (an empty one for a service without spans)."""
    analysis = analyse(ctx)
    return analysis.profiles.get(entity) or TraceProfile(entity, analysis.comparison.mode)


def own_latency_z(ctx: ToolContext, entity: str) -> float | None:
    """How far the service's own span time moved against its own past, when this investigation has
    analysed its traces (None when it has not, as with the traces tool disabled, or when the service has
    too few spans in either period to say)."""
    analysis = ctx.cache.get(CACHE_KEY)
    if not isinstance(analysis, TraceAnalysis) or analysis.comparison.mode is Mode.PEERS:
        return None
    p = analysis.profiles.get(entity)
    if p is None or min(p.spans_reference, p.spans_observed) < MIN_SPANS:
        return None
    return p.latency_z


def entity_scores(ctx: ToolContext) -> dict[str, float]:
    """Own-origin trace score (z-like, >= 0) of every service, for seeding."""
    return {e: p.own for e, p in analyse(ctx).profiles.items()}


def kind_hint(ctx: ToolContext, entity: str) -> FaultKind | None:
    """LATENCY when the service's own time rose, ERRORS when its own errors or call structure moved."""
    return trace_profile(ctx, entity).kind


class TracesTool:
    """Is `entity` the origin of the fault, by its spans' own time, own errors and call structure?"""

    name = "traces"
    source = Source.TRACES

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Score the service's own trace anomaly, net of what its callees already show."""
        analysis = analyse(ctx)
        entity = hypothesis.entity
        p = trace_profile(ctx, entity)
        note = analysis.comparison.note
        if p.spans_observed == 0:
            return ToolResult(summary=f"traces: no spans of {entity} in the window ({note})")
        parts = [
            f"traces: {entity} own time p50 {p.own_p50_reference * 1e3:.1f} -> "
            f"{p.own_p50_observed * 1e3:.1f} ms, "
            f"p90 {p.own_p90_reference * 1e3:.1f} -> {p.own_p90_observed * 1e3:.1f} ms ({note})",
            f"own errors {p.errors_reference} -> {p.errors_observed}",
            f"latency {p.latency_z:.1f}, structure {p.structure_z:.1f}, calls {p.calls_z:.1f} sigma",
        ]
        if p.inherited_from:
            parts.append(f"part explained by {p.inherited_from}")
        parts.append(f"own score {p.own:.1f} of {p.raw:.1f}")
        # Spans that never say how they ended cannot show errors: quiet spans do not clear the entity
        # of a fault that only its answers or its logs would show.
        unseen = FaultKind(hypothesis.fault_kind) is FaultKind.ERRORS and not analysis.outcomes_recorded
        if unseen:
            parts.append("the spans record no outcome, so errors are unseen")
        score = unrefuted(analysis.score(entity), unseen)
        return ToolResult(
            summary="; ".join(parts),
            signals={"anomaly_score": round(score, 4)},
            measurements={
                "mode": analysis.comparison.mode.value,
                "spans": p.spans_observed,
                "spans_reference": p.spans_reference,
                "own_p50_ms": round(p.own_p50_observed * 1e3, 3),
                "own_p50_ms_reference": round(p.own_p50_reference * 1e3, 3),
                "own_p90_ms": round(p.own_p90_observed * 1e3, 3),
                "own_p90_ms_reference": round(p.own_p90_reference * 1e3, 3),
                "own_error_spans": p.errors_observed,
                "own_error_spans_reference": p.errors_reference,
                "own_shift": round(p.own_shift, 4),
                "structure_shift": round(p.structure_shift, 4),
                "calls_change": round(p.calls_change, 4),
                "latency_z": round(p.latency_z, 3),
                "structure_z": round(p.structure_z, 3),
                "calls_z": round(p.calls_z, 3),
                "errors_z": round(p.errors_z, 3),
                "raw_z": round(p.raw, 3),
                "own_z": round(p.own, 3),
            },
        )
