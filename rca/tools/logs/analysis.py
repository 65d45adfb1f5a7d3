"""Logs analysis, pure functions over log lines: broken statement pairs, error bursts and template
shifts per entity.

Every entity's lines are templated (`rca.tools.logs.templates`) and the reference period (normal
behaviour) is compared with the observed period (see `rca.tools.counts`):

- broken pairs (the strongest sign of a code-level fault): lines carry their span (or trace) id, so
  the lines one request logs in one service form a unit. In the reference, statement A is almost
  always accompanied by statement B in the same unit (`OrderService#88` then `OrderService#95`);
  after onset A is still logged but B is missing: the code path between them stopped completing (a
  thrown exception, a changed return value). Only pairs the entity itself follows in the reference
  count. Where the lines' span ids meet recorded spans, the start of the span (its operation) is the
  first statement of the unit, so a request that no longer logs its only statement (`place` started,
  `#88` never logged: the exception came first) is a broken pair too. A unit that logs, instead of B,
  an INFO statement that stood in for B before onset took the code's other branch (a workload mix
  shift), and a vanished WARN+ line is no fault: neither breaks a pair. The break is looked for
  where it may have begun (after the observed period starts, or already inside a preceding
  reference when the alert came late), and a break significant at 5 sigma once corrected for every
  pair tested reaches the support line (`rca.tools.logs.pairs`);
- the WARN+ burst: problem lines, observed vs reference, against the entity's own volume;
- the template shift: WARN+ templates that are new after onset or grow against the entity's volume
  (INFO templates come and go with the workload mix; a vanished code path shows as a broken pair).

Errors propagate to callers. A caller's unit that breaks in a trace where a service it depends on
did something new (broke a pair that now breaks clearly more often, or logged a new or grown problem
line) after the unit's last step is the callee's doing and is not counted as the caller's own; a
caller whose problem lines name another service, or report generic call failures, is discounted by
that service's score, as metrics' `own_z` does. The score only supports when it rests on the
entity's own past and leads every other entity clearly; otherwise it stays inconclusive.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx
import numpy as np
import pandas as pd
from scipy.stats import norm

from rca.core.verdict import DEFAULT_THRESHOLDS
from rca.telemetry.model import Conventions, DependencyGraph, Severity
from rca.tools.counts import Comparison, ReferenceKind, count_z, lead, robust_peer_z
from rca.tools.logs.pairs import SPAN_ANCHOR, PairStat, Units, own_pairs, units
from rca.tools.logs.templates import templates
from rca.tools.stats import DISCOVERY_SIGMA, KNEE, squash, supported, unrefuted

# A template counts in the shift only when it is expected (or seen) at least this often.
MIN_TEMPLATE_COUNT = 4.0
NEW_ERROR_WEIGHT = 1.5  # a new error-level template says more than a new INFO one
# An entity compares with its own past only with at least this many reference lines.
MIN_OWN_REFERENCE = 10

# Cues that a problem line reports a failed call to someone else rather than the entity's own fault.
# An HTTP 5xx status stands alone: three digits inside a clock or a decimal (`10:02:43.587`) are not one.
_CALL_FAILURE = re.compile(
    r"connection refused|connect timed out|read timed out|no instances available|"
    r"i/o error on|service unavailable|bad gateway|gateway timeout|(?<![.:,])\b5\d\d\b(?![.:,]\d)|"
    r"call(?:ing)? .{0,60}fail|failed to (?:call|connect|reach)|upstream",
    re.IGNORECASE,
)


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
    reference_kind: ReferenceKind
    lines_reference: int = 0
    lines_observed: int = 0
    problems_reference: int = 0
    problems_observed: int = 0
    errors_observed: int = 0
    minutes_reference: float = 0.0
    minutes_observed: float = 0.0
    templates: list[TemplateStat] = field(default_factory=list)
    pairs: list[PairStat] = field(default_factory=list)  # expected pairs, most broken first
    inherited_units: int = 0  # broken observed units explained by a service it depends on
    burst_z: float = 0.0  # WARN+ burst (or, in peer mode, the problem rate against the peers)
    shift_z: float = 0.0  # the strongest template surprise
    pair_z: float = 0.0  # the strongest own pair break
    raw: float = 0.0  # max(burst, shift) before the blame discount, max with pair_z
    own: float = 0.0  # raw minus what the entities its problem lines blame explain
    blamed: str | None = None  # the entity its problem lines point at, when one does
    blamed_share: float = 0.0  # share of its observed problem lines that report failed calls

    @property
    def own_reference(self) -> bool:
        """Whether the entity has enough reference lines of its own to compare with its past."""
        return self.reference_kind is not ReferenceKind.PEERS and self.lines_reference >= MIN_OWN_REFERENCE

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
        if self.reference_kind is ReferenceKind.PEERS:
            return []
        return sorted(
            (t for t in self.templates if t.reference == 0 and t.observed > 0),
            key=lambda t: (-t.problem, -t.observed, t.template),
        )

    @property
    def top(self) -> TemplateStat | None:
        """The most surprising template (either way)."""
        return max(self.templates, key=lambda t: (abs(t.z), t.template), default=None)

    @property
    def broken(self) -> PairStat | None:
        """The most broken expected pair, when one broke."""
        return self.pairs[0] if self.pairs and self.pairs[0].z > 0 else None


@dataclass
class LogAnalysis:
    """Every entity's profile for one investigation."""

    comparison: Comparison
    profiles: dict[str, LogProfile]

    def lead(self, entity: str) -> float:
        """The entity's own score over the strongest other entity's (inf when none scored)."""
        return lead({e: p.own for e, p in self.profiles.items()}, entity)

    @cached_property
    def pairs_tested(self) -> int:
        """Expected pairs tested for a break, over every entity."""
        return sum(len(p.pairs) for p in self.profiles.values())

    def pair_sigma(self, entity: str) -> float:
        """The significance of the entity's strongest own pair break once corrected for every pair
        tested in the investigation (the look-elsewhere effect; Bonferroni), in sigmas; 0 for none."""
        prof = self.profiles.get(entity)
        if prof is None or prof.pair_z <= 0:
            return 0.0
        return max(0.0, float(norm.isf(min(0.5, norm.sf(prof.pair_z) * max(1, self.pairs_tested)))))


ANCHOR_COLUMNS = ["time", "entity", "trace_id", "unit", "template"]
SPAN_PATH_DEPTH = 4  # span names along a service's own call path, entry first


def span_anchors(frame: pd.DataFrame) -> pd.DataFrame:
    """The start of every span of a span frame (`rca.tools.spans`), as the first event of its unit (a
    log line's unit is its span id). Spans only anchor pairs; they are not log volume.

    A span is named by its path inside its service (`/orders/ > OrderController.place`): one
    controller method may serve two endpoints whose requests log different statements.
    """
    spans = frame.drop_duplicates("span_id").rename(columns={"start": "time", "span_id": "unit"})
    by_id = spans.set_index("unit")
    path, up = spans["name"].astype(str), spans["parent"]
    for _ in range(SPAN_PATH_DEPTH - 1):
        same = up.map(by_id["entity"]).eq(spans["entity"])
        if not same.any():
            break
        path = path.where(~same, up.map(by_id["name"]).astype(str) + " > " + path)
        up = up.map(by_id["parent"]).where(same)
    return spans.assign(template=SPAN_ANCHOR + path)[ANCHOR_COLUMNS]


_PROBLEM = frozenset(s.value for s in Severity if s.is_problem)
_ERROR = frozenset({Severity.ERROR.value, Severity.FATAL.value})


def _by_entity(frame: pd.DataFrame) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """`frame`'s rows by entity (in their order), and the empty frame an entity without rows gets."""
    groups = {str(e): rows for e, rows in frame.groupby("entity", sort=True)} if not frame.empty else {}
    return groups, frame.iloc[0:0]


_COUNT_COLUMNS = ["entity", "severity", "template"]  # what `_template_counts` reads (no bodies copied)


def _template_counts(ref: pd.DataFrame, obs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per entity, its templates' lines in the reference and observed periods (`ref`, `obs`) and
    whether any of them is WARN or worse (`problem`), counted for every entity at once."""
    both = pd.concat([ref[_COUNT_COLUMNS], obs[_COUNT_COLUMNS]])
    if both.empty:
        return {}
    keys = ["entity", "template"]
    counts = pd.DataFrame(
        {
            "ref": ref.groupby(keys).size(),
            "obs": obs.groupby(keys).size(),
            "problem": both["severity"].isin(_PROBLEM).groupby([both["entity"], both["template"]]).max(),
        }
    ).fillna({"ref": 0, "obs": 0})
    return {str(e): part.droplevel(0) for e, part in counts.groupby(level=0, sort=False)}


def _profile(
    entity: str, ref: pd.DataFrame, obs: pd.DataFrame, cmp: Comparison, counts: pd.DataFrame | None
) -> LogProfile:
    """Volumes, the WARN+ burst and the template shift of one entity (`counts`: its templates', from
    `_template_counts`; None when it has no line in either period)."""
    prof = LogProfile(entity, cmp.kind)
    prof.minutes_observed = cmp.observed.seconds / 60.0
    prof.lines_observed = len(obs)
    prof.problems_observed = int(obs["severity"].isin(_PROBLEM).sum())
    prof.errors_observed = int(obs["severity"].isin(_ERROR).sum())
    if cmp.reference is None:
        return prof
    prof.minutes_reference = cmp.reference.seconds / 60.0
    prof.lines_reference = len(ref)
    prof.problems_reference = int(ref["severity"].isin(_PROBLEM).sum())
    # Problem lines against the entity's own volume: a workload that grows every line alike is no burst.
    if prof.lines_reference > 0:
        scale = prof.lines_observed / prof.lines_reference
    else:
        scale = cmp.observed.seconds / cmp.reference.seconds
    prof.burst_z = float(count_z(prof.problems_reference, prof.problems_observed, scale))
    if counts is None or counts.empty:
        return prof
    # Each template against the entity's volume in the two periods: a workload that shifts every
    # template alike moves nothing. (Plain numpy: it runs once per entity and investigation.)
    refs, obses = counts["ref"].to_numpy(np.float64), counts["obs"].to_numpy(np.float64)
    problem = counts["problem"].to_numpy(bool)
    total_ref, total_obs = float(refs.sum()), float(obses.sum())
    volume = total_obs / total_ref if total_ref > 0 else 1.0
    z = count_z(refs, obses, volume)
    new = (refs == 0) & (obses > 0)
    z = np.where(new & problem, z * NEW_ERROR_WEIGHT, z)
    relevant = np.maximum(refs * volume, obses) >= MIN_TEMPLATE_COUNT
    prof.templates = [
        TemplateStat(str(t), int(r), int(o), bool(p), float(zz))
        for t, r, o, p, zz in zip(counts.index, refs, obses, problem, np.where(relevant, z, 0.0), strict=True)
    ]
    if total_ref > 0:
        # Only problem templates that appear or grow: INFO templates come and go with the workload
        # mix, and a code path that stopped completing shows better as a broken pair.
        prof.shift_z = float(np.where(relevant & problem, z, 0.0).clip(min=0.0).max())
    return prof


def _blame(entity: str, problems: pd.Series, names: Sequence[str]) -> tuple[dict[str, int], int]:
    """(lines naming each other entity, lines with a call-failure cue) among an entity's problem lines."""
    # Distinct lines once each (a burst repeats a few lines many times), in plain Python: a pandas
    # string call per entity name costs more than the handful of lines it would scan.
    lines = problems.str.lower().value_counts()
    named = {n: sum(k for text, k in lines.items() if n.lower() in str(text)) for n in names if n != entity}
    cue = sum(k for text, k in lines.items() if _CALL_FAILURE.search(str(text)))
    return {n: int(k) for n, k in named.items() if k > 0}, int(cue)


def _discount_blamed(
    graph: DependencyGraph, profiles: dict[str, LogProfile], blame: dict[str, tuple[dict[str, int], int]]
) -> None:
    """Own scores: burst and shift net of the entity its failed-call lines blame."""
    for p in profiles.values():  # every raw score first: the discount reads the culprit's
        p.raw = max(0.0, p.burst_z, p.shift_z, p.pair_z)
    for entity, p in profiles.items():
        noisy = max(0.0, p.burst_z, p.shift_z)
        named, cue = blame.get(entity, ({}, 0))
        suspects = named or ({c: cue for c in graph.callees(entity) if c != entity} if cue else {})
        if p.problems_observed == 0 or not suspects:
            p.own = p.raw
            continue
        culprit = max(suspects, key=lambda n: (profiles[n].raw if n in profiles else 0.0, n))
        share = min(1.0, max(sum(named.values()), cue) / p.problems_observed)
        # Lines that report failed calls are the callee's symptom, even when the callee shows nothing
        # itself (`No instances available for X`: it is not there to show anything).
        inherited = share * max(noisy, profiles[culprit].raw if culprit in profiles else 0.0)
        p.own = max(p.pair_z, noisy - inherited)
        p.blamed, p.blamed_share = culprit, share


def profile_lines(
    frame: pd.DataFrame,
    cmp: Comparison,
    anchors: pd.DataFrame,
    entities: Sequence[str],
    graph: DependencyGraph,
    g: nx.DiGraph,
    conventions: Conventions,
) -> LogAnalysis:
    """Profile every entity's log lines (`frame`: time, entity, severity, body, trace_id, unit) with the
    span starts that anchor their pairs (`span_anchors`); `g` is `graph` as networkx, `conventions`
    the source's log formats."""
    profiles: dict[str, LogProfile] = {}
    blame: dict[str, tuple[dict[str, int], int]] = {}
    found_units: dict[str, Units] = {}
    observed: dict[str, pd.DataFrame] = {}
    if not frame.empty:
        frame = frame.assign(template=templates(frame, conventions))
    # Split into periods and grouped by entity once for all entities (row order kept within each).
    ref_all, obs_all = cmp.split(frame, "time")
    refs, obses = _by_entity(ref_all), _by_entity(obs_all)
    counts = _template_counts(ref_all, obs_all) if cmp.reference is not None and not frame.empty else {}
    span_refs, span_obses = (_by_entity(part) for part in cmp.split(anchors, "time"))
    anchored = set(anchors["entity"])
    erred = frame.loc[frame["severity"].isin(_ERROR)] if not frame.empty else frame
    errors = {str(e): set(t) for e, t in erred.groupby("entity")["template"]} if not erred.empty else {}
    present = set(frame["entity"]) if not frame.empty else set()
    for entity in entities:
        if entity not in present:
            profiles[entity] = LogProfile(entity, cmp.kind, minutes_observed=cmp.observed.seconds / 60.0)
            continue
        ref, obs = refs[0].get(entity, refs[1]), obses[0].get(entity, obses[1])
        profiles[entity] = _profile(entity, ref, obs, cmp, counts.get(entity))
        observed[entity] = obs
        blame[entity] = _blame(entity, obs.loc[obs["severity"].isin(_PROBLEM), "body"], entities)
        if cmp.reference is None:
            continue
        if entity in anchored:
            span_ref = span_refs[0].get(entity, span_refs[1])
            span_obs = span_obses[0].get(entity, span_obses[1])
            # Only the columns the units read: the log lines' bodies need no copy.
            ref = pd.concat([ref[ANCHOR_COLUMNS], span_ref])
            obs = pd.concat([obs[ANCHOR_COLUMNS], span_obs])
        problems = {t.template for t in profiles[entity].templates if t.problem}
        found = units(ref, obs, problems, errors.get(entity, set()), cmp.kind is not ReferenceKind.LATER)
        if found is not None:
            found_units[entity] = found
    grown = {
        e: {t.template for t in p.templates if t.problem and (t.z >= KNEE or t.reference == 0)}
        for e, p in profiles.items()
    }
    for entity, (inherited, pairs) in own_pairs(g, found_units, observed, grown).items():
        prof = profiles[entity]
        prof.inherited_units, prof.pairs = inherited, pairs
        prof.pair_z = max(0.0, pairs[0].z) if pairs else 0.0
    if cmp.kind is ReferenceKind.PEERS:
        # No reference: an entity's problem rate against the other entities' (floor: 1 line/minute).
        rates = {e: p.problem_rate_observed for e, p in profiles.items()}
        for e, z in robust_peer_z(rates, floor=1.0).items():
            profiles[e].burst_z = z
    _discount_blamed(graph, profiles, blame)
    return LogAnalysis(cmp, profiles)


def score(analysis: LogAnalysis, entity: str) -> float:
    """The anomaly score of the entity's own log signal, kept inconclusive when it is contested or
    rests on other entities rather than the entity's own past. Only logs that did not move refute, as
    with metrics: a weak but real signal (own score past the knee) leaves the question open.

    A pair break significant at `DISCOVERY_SIGMA` after the look-elsewhere correction reaches the
    support line whatever its raw z: the pair test is an exact count test, whose z is capped by the
    square root of the units seen (13 of 13 requests broken against 0 of 46 gives 7.7 at most), not a
    robust z of a noisy series, for which the shared knee and scale were set."""
    prof = analysis.profiles.get(entity)
    if prof is None:
        return 0.0
    value = squash(prof.own)
    if analysis.pair_sigma(entity) >= DISCOVERY_SIGMA:
        value = max(value, DEFAULT_THRESHOLDS.anomaly_supports)
    return supported(unrefuted(value, prof.own >= KNEE), prof.own_reference, analysis.lead(entity))
