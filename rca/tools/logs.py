"""Logs: error and warning bursts per entity against the baseline, with drain3-mined templates.

For every entity of the investigation the tool reads its log lines once, mines their templates with
drain3 (configured here, no persistence; numbers, ids, uuids and clocks masked) and compares the
reference period (normal behaviour) with the observed period (after onset):

- the WARN+ burst: problem lines per minute, observed vs reference (a Poisson-style z);
- the template shift: templates that are new after onset (never seen before, error-level ones
  weigh more) and templates that vanish or collapse while the entity keeps logging (a code path that
  stopped completing, the trace of a thrown exception or a changed return value).

Errors propagate to callers: a caller that logs "call to X failed" or "No instances available for X"
is a victim. The origin-aware own score discounts an entity by the score of the services its problem
lines name (and, for generic call-failure cues, of its callees), as metrics' `own_z` does.

Where the reference comes from (see `comparison`): the baseline window when it holds enough data,
else the part of the incident window before the onset hint, else no reference at all, and then each
entity is compared with the other entities (peers) and the summary says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import pandas as pd
from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.core.redact import redact
from rca.telemetry.model import Severity, TimeWindow
from rca.tools.base import ToolContext, ToolResult
from rca.tools.faults import FaultKind
from rca.tools.stats import MAD_TO_SIGMA, squash

CACHE_KEY = "logs.analysis"
MAX_LINES = 200_000  # per entity and query: far above a few minutes of any service's logs
# A reference period needs this many records (all entities together) spread over this many seconds.
MIN_REFERENCE_RECORDS = 30
MIN_REFERENCE_SECONDS = 20.0
# A template counts in the shift only when it is expected (or seen) at least this often.
MIN_TEMPLATE_COUNT = 4.0
NEW_ERROR_WEIGHT = 1.5  # a new error-level template says more than a new INFO one
# INFO templates come and go with the workload mix (which requests the users make); a shift in them
# counts for this share of a shift in WARN+ templates.
INFO_WEIGHT = 0.6
BODY_CHARS = 200  # templates are mined on the head of a line: long payload tails are parameters
TEMPLATE_SHOWN = 70  # characters of a template quoted in a summary

# Masks applied before mining (vectorised, so that identical masked lines are mined once) and again
# inside drain3 (its own masker, for lines mined one by one). Order matters: the specific shapes first.
MASKS: tuple[tuple[str, str], ...] = (
    (r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?Z?)?|\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?", "TS"),
    (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "UUID"),
    (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "IP"),
    (r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{12,}\b", "ID"),
    # Numbers that stand alone; digits glued to a name (`Impl#37`, `ts2`) identify a statement.
    (r"(?<![A-Za-z0-9_#.])[-+]?\d+(?:\.\d+)?", "NUM"),
)
_MASK_RES = tuple((re.compile(p), f"<{name}>") for p, name in MASKS)

# Cues that a problem line reports a failed call to someone else rather than the entity's own fault.
_CALL_FAILURE = re.compile(
    r"connection refused|connect timed out|read timed out|no instances available|"
    r"i/o error on|service unavailable|bad gateway|gateway timeout|\b5\d\d\b|"
    r"call(?:ing)? .{0,60}fail|failed to (?:call|connect|reach)|upstream",
    re.IGNORECASE,
)


class Mode(StrEnum):
    """Where the reference behaviour comes from."""

    BASELINE = "baseline"  # the baseline window
    PRE_ONSET = "pre-onset"  # the part of the incident window before the onset hint
    PEERS = "peers"  # no reference: each entity against the other entities


@dataclass(frozen=True)
class Comparison:
    """The reference and observed periods of one analysis, clipped to where data exists."""

    mode: Mode
    reference: TimeWindow | None
    observed: TimeWindow

    @property
    def note(self) -> str:
        """A few words for summaries on how the comparison was made."""
        if self.mode is Mode.BASELINE:
            return "vs baseline"
        if self.mode is Mode.PRE_ONSET:
            return "vs pre-onset (baseline empty)"
        return "vs other services (no pre-onset data)"


def _clip(window: TimeWindow, first: float, last: float) -> TimeWindow | None:
    start, end = max(window.start, first), min(window.end, last)
    return TimeWindow(start, end) if end > start else None


def comparison(ctx: ToolContext, times: Sequence[float] | np.ndarray) -> Comparison:
    """Choose the reference for records at `times` (every entity's, one modality).

    The baseline window when it holds enough records; else the incident window's part before the
    onset hint; else none (peer comparison). Windows are clipped to the data's own extent, so that
    rates are per minute of recorded data, not of an empty window edge.
    """
    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        return Comparison(Mode.PEERS, None, ctx.incident)
    first, last = float(t.min()), float(np.nextafter(t.max(), math.inf))

    def enough(window: TimeWindow | None) -> bool:
        if window is None:
            return False
        inside = t[(t >= window.start) & (t < window.end)]
        return inside.size >= MIN_REFERENCE_RECORDS and float(np.ptp(inside)) >= MIN_REFERENCE_SECONDS

    observed = _clip(ctx.incident, first, last) or ctx.incident
    base = _clip(ctx.baseline, first, last)
    if base is not None and base.end <= observed.start + 1e-9 and enough(base):
        return Comparison(Mode.BASELINE, base, observed)
    onset = min(max(ctx.onset, ctx.incident.start), ctx.incident.end)
    pre = _clip(TimeWindow(ctx.incident.start, onset), first, last)
    post = _clip(TimeWindow(onset, ctx.incident.end), first, last)
    if pre is not None and post is not None and enough(pre):
        return Comparison(Mode.PRE_ONSET, pre, post)
    return Comparison(Mode.PEERS, None, observed)


def robust_peer_z(values: dict[str, float], floor: float) -> dict[str, float]:
    """Each value's robust z against all the values (median and MAD; the spread floored)."""
    if not values:
        return {}
    arr = np.array(list(values.values()), dtype=np.float64)
    med = float(np.median(arr))
    spread = max(float(np.median(np.abs(arr - med))) * MAD_TO_SIGMA, floor)
    return {k: (v - med) / spread for k, v in values.items()}


def mask(text: pd.Series) -> pd.Series:
    """Mask clocks, uuids, ips, hex ids and free-standing numbers (vectorised)."""
    out = text
    for pattern, token in _MASK_RES:
        out = out.str.replace(pattern, token, regex=True)
    return out.str.replace(r"\s+", " ", regex=True).str.strip()


def new_miner() -> TemplateMiner:
    """A drain3 miner configured in code: in memory, with the masks above."""
    config = TemplateMinerConfig()
    config.masking_instructions = [MaskingInstruction(p, name) for p, name in MASKS]
    config.drain_sim_th = 0.5
    # Drain never merges lines whose first depth-2 tokens differ: with depth 5 those are the clock,
    # the level and the logger / statement (`Impl#37`) in most formats, so that two statements of one
    # method stay two templates (numbers are masked above, so tokens with digits may be tree keys).
    config.drain_depth = 5
    config.drain_max_children = 100
    config.parametrize_numeric_tokens = False
    config.profiling_enabled = False
    return TemplateMiner(persistence_handler=None, config=config)


def _short(template: str) -> str:
    """A template fit for a summary: masks collapsed, redacted, bounded."""
    text = re.sub(r"(?:<\*>|<(?:TS|NUM|ID)>)\s*", "", template)
    text = re.sub(r"\b(?:TraceID|SpanID):\s*", "", text).strip()
    text = redact(text)
    return text if len(text) <= TEMPLATE_SHOWN else text[: TEMPLATE_SHOWN - 1] + "\u2026"


@dataclass(frozen=True)
class TemplateStat:
    """One mined template of one entity."""

    template: str
    reference: int  # lines in the reference period
    observed: int  # lines in the observed period
    problem: bool  # WARN or worse
    z: float  # signed surprise of the observed count (+ new / burst, - vanished / collapsed)


@dataclass
class LogProfile:
    """What one entity's logs did, reference vs observed, and its origin-aware score."""

    entity: str
    mode: Mode
    lines_reference: int = 0
    lines_observed: int = 0
    problems_reference: int = 0
    problems_observed: int = 0
    errors_observed: int = 0
    minutes_reference: float = 0.0
    minutes_observed: float = 0.0
    templates: list[TemplateStat] = field(default_factory=list)
    burst_z: float = 0.0  # WARN+ burst (or, in peer mode, the problem rate against the peers)
    shift_z: float = 0.0  # the strongest template surprise
    raw: float = 0.0  # max(burst, shift)
    own: float = 0.0  # raw minus what the entities its problem lines blame explain
    blamed: str | None = None  # the entity its problem lines point at, when one does
    blamed_share: float = 0.0  # share of its observed problem lines that report failed calls

    @property
    def problem_rate_reference(self) -> float:
        """WARN+ lines per minute in the reference period."""
        return self.problems_reference / self.minutes_reference if self.minutes_reference > 0 else 0.0

    @property
    def problem_rate_observed(self) -> float:
        """WARN+ lines per minute in the observed period."""
        return self.problems_observed / self.minutes_observed if self.minutes_observed > 0 else 0.0

    @property
    def new_templates(self) -> list[TemplateStat]:
        """Templates seen after onset and never before, most frequent first."""
        if self.mode is Mode.PEERS:
            return []
        return sorted(
            (t for t in self.templates if t.reference == 0 and t.observed > 0),
            key=lambda t: (-t.problem, -t.observed, t.template),
        )

    @property
    def top(self) -> TemplateStat | None:
        """The most surprising template (either way)."""
        return max(self.templates, key=lambda t: (abs(t.z), t.template), default=None)


@dataclass
class LogAnalysis:
    """Every entity's profile for one investigation."""

    comparison: Comparison
    profiles: dict[str, LogProfile]


def count_z(reference: float | np.ndarray, observed: float | np.ndarray, ratio: float) -> np.ndarray:
    """Signed surprise of an observed count against a reference count, `ratio` = observed exposure /
    reference exposure (volume or time).

    The conditional binomial test of two Poisson counts: given a + b events, b ~ Binomial(a + b,
    ratio / (1 + ratio)) when nothing changed. Unlike a Poisson z against a rate estimated from the
    reference, it knows that a small reference is itself uncertain (0 -> 68 lines after a reference
    of 10 lines is far less surprising than after one of 1,000).
    """
    a = np.asarray(reference, dtype=np.float64)
    b = np.asarray(observed, dtype=np.float64)
    p = ratio / (1.0 + ratio)
    n = a + b
    return (b - n * p) / np.sqrt(n * p * (1.0 - p) + 1.0)


def _entities(ctx: ToolContext) -> list[str]:
    return sorted({*ctx.graph.names(), ctx.alert.entity})


def _frame(ctx: ToolContext, entities: Iterable[str]) -> pd.DataFrame:
    span = TimeWindow(min(ctx.baseline.start, ctx.incident.start), max(ctx.baseline.end, ctx.incident.end))
    rows = [
        (r.time, r.entity, r.severity.value, r.body)
        for e in entities
        for r in ctx.source.logs(e, span, limit=MAX_LINES)
    ]
    return pd.DataFrame(rows, columns=["time", "entity", "severity", "body"])


def _templates(frame: pd.DataFrame) -> pd.Series:
    """The drain3 template of every line of one entity (mined over its distinct masked lines)."""
    masked = mask(frame["body"].str.slice(0, BODY_CHARS))
    miner = new_miner()
    ids: dict[str, int] = {}
    for line in pd.unique(masked):  # first-seen order: deterministic
        ids[line] = int(miner.add_log_message(line)["cluster_id"])
    texts = {c.cluster_id: c.get_template() for c in miner.drain.clusters}
    return masked.map(lambda line: texts[ids[line]])


_PROBLEM = frozenset(s.value for s in Severity if s.is_problem)
_ERROR = frozenset({Severity.ERROR.value, Severity.FATAL.value})


def _problem_flags(lines: pd.DataFrame) -> pd.Series:
    """Per template: whether any of its lines is WARN or worse."""
    return lines["severity"].isin(_PROBLEM).groupby(lines["template"]).max()


def _profile(entity: str, lines: pd.DataFrame, cmp: Comparison) -> LogProfile:
    prof = LogProfile(entity, cmp.mode)
    obs_w = cmp.observed
    prof.minutes_observed = obs_w.seconds / 60.0
    is_obs = (lines["time"] >= obs_w.start) & (lines["time"] < obs_w.end)
    obs = lines[is_obs]
    prof.lines_observed = len(obs)
    prof.problems_observed = int(obs["severity"].isin(_PROBLEM).sum())
    prof.errors_observed = int(obs["severity"].isin(_ERROR).sum())
    if cmp.reference is None:
        return prof
    ref_w = cmp.reference
    prof.minutes_reference = ref_w.seconds / 60.0
    ref = lines[(lines["time"] >= ref_w.start) & (lines["time"] < ref_w.end)]
    prof.lines_reference = len(ref)
    prof.problems_reference = int(ref["severity"].isin(_PROBLEM).sum())
    # Problem lines against the entity's own volume: a workload that grows every line alike is no burst.
    if prof.lines_reference > 0:
        scale = prof.lines_observed / prof.lines_reference
    else:
        scale = obs_w.seconds / ref_w.seconds
    prof.burst_z = float(count_z(prof.problems_reference, prof.problems_observed, scale))

    counts = pd.DataFrame(
        {
            "ref": ref.groupby("template").size(),
            "obs": obs.groupby("template").size(),
            "problem": _problem_flags(pd.concat([ref, obs])),
        }
    ).fillna({"ref": 0, "obs": 0})
    if counts.empty:
        return prof
    # Each template against the entity's volume in the two periods: a workload that shifts every
    # template alike moves nothing.
    total_ref, total_obs = float(counts["ref"].sum()), float(counts["obs"].sum())
    volume = total_obs / total_ref if total_ref > 0 else 1.0
    expected = counts["ref"] * volume
    z = pd.Series(count_z(counts["ref"].to_numpy(), counts["obs"].to_numpy(), volume), index=counts.index)
    new = (counts["ref"] == 0) & (counts["obs"] > 0)
    z = z.where(~(new & counts["problem"]), z * NEW_ERROR_WEIGHT)
    relevant = np.maximum(expected, counts["obs"]) >= MIN_TEMPLATE_COUNT
    prof.templates = [
        TemplateStat(str(t), int(r), int(o), bool(p), float(zz))
        for t, r, o, p, zz in zip(
            counts.index, counts["ref"], counts["obs"], counts["problem"], z.where(relevant, 0.0), strict=True
        )
    ]
    if total_ref > 0:
        weighted = np.abs(z.where(relevant, 0.0)) * np.where(counts["problem"], 1.0, INFO_WEIGHT)
        prof.shift_z = float(weighted.max())
    return prof


def _blame(entity: str, problems: pd.Series, names: Sequence[str]) -> tuple[dict[str, int], int]:
    """(lines naming each other entity, lines with a call-failure cue) among an entity's problem lines."""
    lowered = problems.str.lower()
    named = {n: int(lowered.str.contains(n.lower(), regex=False).sum()) for n in names if n != entity}
    cue = int(lowered.str.contains(_CALL_FAILURE).sum())
    return {n: k for n, k in named.items() if k > 0}, cue


def analyse(ctx: ToolContext) -> LogAnalysis:
    """Profile every entity's logs once per investigation (cached in `ctx.cache`)."""
    cached = ctx.cache.get(CACHE_KEY)
    if isinstance(cached, LogAnalysis):
        return cached
    entities = _entities(ctx)
    frame = _frame(ctx, entities)
    cmp = comparison(ctx, frame["time"].to_numpy())
    profiles: dict[str, LogProfile] = {}
    blame: dict[str, tuple[dict[str, int], int]] = {}
    groups = dict(tuple(frame.groupby("entity", sort=True))) if not frame.empty else {}
    for entity in entities:
        lines = groups.get(entity)
        if lines is None or lines.empty:
            profiles[entity] = _profile(entity, frame.iloc[0:0].assign(template=""), cmp)
            continue
        lines = lines.assign(template=_templates(lines))
        profiles[entity] = _profile(entity, lines, cmp)
        obs = lines[(lines["time"] >= cmp.observed.start) & (lines["time"] < cmp.observed.end)]
        blame[entity] = _blame(entity, obs.loc[obs["severity"].isin(_PROBLEM), "body"], entities)
    if cmp.mode is Mode.PEERS:
        # No reference: an entity's problem rate against the other entities' (floor: 1 line/minute).
        rates = {e: p.problem_rate_observed for e, p in profiles.items()}
        for e, z in robust_peer_z(rates, floor=1.0).items():
            profiles[e].burst_z = z
    for p in profiles.values():
        p.raw = max(0.0, p.burst_z, p.shift_z)
    for entity, p in profiles.items():
        named, cue = blame.get(entity, ({}, 0))
        if p.problems_observed == 0 or (not named and not cue):
            p.own = p.raw
            continue
        # Who the failed calls point at: the named entity, else the worst callee.
        suspects = named or {c: cue for c in ctx.graph.callees(entity) if c != entity}
        if not suspects:
            p.own = p.raw
            continue
        culprit = max(suspects, key=lambda n: (profiles[n].raw if n in profiles else 0.0, n))
        share = min(1.0, max(sum(named.values()), cue) / p.problems_observed)
        inherited = share * (profiles[culprit].raw if culprit in profiles else 0.0)
        p.own = max(0.0, p.raw - inherited)
        p.blamed, p.blamed_share = culprit, share
    result = LogAnalysis(cmp, profiles)
    ctx.cache[CACHE_KEY] = result
    return result


def log_profile(ctx: ToolContext, entity: str) -> LogProfile:
    """The entity's log profile (an empty one for an entity without logs)."""
    analysis = analyse(ctx)
    return analysis.profiles.get(entity) or LogProfile(entity, analysis.comparison.mode)


def entity_scores(ctx: ToolContext) -> dict[str, float]:
    """Own-origin log score (z-like, >= 0) of every entity, for seeding."""
    return {e: p.own for e, p in analyse(ctx).profiles.items()}


def kind_hint(ctx: ToolContext, entity: str) -> FaultKind | None:
    """ERRORS when the entity's own log signal moved (new error templates, a WARN+ burst or a code
    path that stopped completing); None when its logs say nothing."""
    prof = log_profile(ctx, entity)
    return FaultKind.ERRORS if prof.own >= 3.0 else None


class LogsTool:
    """Is `entity` the origin of the fault, by its logs?"""

    name = "logs"
    source = Source.LOGS

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Score the entity's own log anomaly (bursts and template shift net of blamed callees)."""
        analysis = analyse(ctx)
        entity = hypothesis.entity
        prof = log_profile(ctx, entity)
        note = analysis.comparison.note
        if prof.lines_observed == 0 and prof.lines_reference == 0:
            return ToolResult(summary=f"logs: no log lines for {entity} in the window ({note})")
        parts = [
            f"logs: {entity} {prof.problems_observed} warn/error lines "
            f"({prof.problem_rate_observed:.1f}/min"
            + (f" vs {prof.problem_rate_reference:.1f}/min" if analysis.comparison.reference else "")
            + f", {note})"
        ]
        new = prof.new_templates
        if new:
            parts.append(f"{len(new)} new templates, e.g. '{_short(new[0].template)}'")
        top = prof.top
        if top is not None and top.z < -3.0:
            parts.append(f"collapsed: '{_short(top.template)}' {top.reference} -> {top.observed}")
        if prof.blamed and prof.own < prof.raw:
            parts.append(f"{prof.blamed_share:.0%} of its problems are failed calls to {prof.blamed}")
        parts.append(f"own score {prof.own:.1f} of {prof.raw:.1f}")
        ratio = (
            prof.problem_rate_observed / prof.problem_rate_reference
            if prof.problem_rate_reference > 0
            else (math.inf if prof.problem_rate_observed > 0 else 1.0)
        )
        measurements: dict[str, float | str] = {
            "mode": analysis.comparison.mode.value,
            "problem_lines": prof.problems_observed,
            "problem_lines_reference": prof.problems_reference,
            "error_lines": prof.errors_observed,
            "rate_per_min": round(prof.problem_rate_observed, 3),
            "rate_per_min_reference": round(prof.problem_rate_reference, 3),
            "rate_ratio": round(ratio, 3) if math.isfinite(ratio) else "inf",
            "new_templates": len(new),
            "new_error_templates": sum(1 for t in new if t.problem),
            "burst_z": round(prof.burst_z, 3),
            "shift_z": round(prof.shift_z, 3),
            "raw_z": round(prof.raw, 3),
            "own_z": round(prof.own, 3),
        }
        if top is not None:
            measurements["top_template"] = _short(top.template)
        if prof.blamed:
            measurements["blamed"] = prof.blamed
        return ToolResult(
            summary="; ".join(parts),
            signals={"anomaly_score": round(squash(prof.own), 4)},
            measurements=measurements,
        )
