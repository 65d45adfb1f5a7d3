"""Logs: broken statement pairs, error bursts and template shifts per entity, with drain3 templates.

For every entity of the investigation the tool reads its log lines once, mines their templates with
drain3 (configured here, no persistence; numbers, ids, uuids and clocks masked) and compares the
reference period (normal behaviour) with the observed period (see `rca.tools.counts`):

- broken pairs (the strongest sign of a code-level fault): lines carry their span (or trace) id, so
  the lines one request logs in one service form a unit. In the reference, statement A is almost
  always accompanied by statement B in the same unit (`Impl#451` then `Impl#457`); after onset A is
  still logged but B is missing: the code path between them stopped completing (a thrown exception,
  a changed return value). Only pairs the entity itself follows in the reference count. Where the
  lines' span ids meet recorded spans, the start of the span (its operation) is the first statement
  of the unit, so a request that no longer logs its only statement (`queryByIds` started, `#53`
  never logged: the exception came first) is a broken pair too. A unit that logs, instead of B, an
  INFO statement that stood in for B before onset took the code's other branch (a workload mix
  shift), and a vanished WARN+ line is no fault: neither breaks a pair. The break is looked for
  where it may have begun (after the observed period starts, or already inside a preceding
  reference when the alert came late), and a break significant at 5 sigma once corrected for every
  pair tested reaches the support line;
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

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx
import numpy as np
import pandas as pd
from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig
from scipy.stats import norm

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.core.redact import redact
from rca.core.verdict import DEFAULT_THRESHOLDS
from rca.telemetry.model import Severity, TimeWindow
from rca.tools.base import ToolContext, ToolResult
from rca.tools.counts import (
    Comparison,
    Mode,
    count_z,
    fetch_compared,
    lead,
    proportion_z,
    robust_peer_z,
)
from rca.tools.faults import FaultKind
from rca.tools.stats import KNEE, squash, supported, unrefuted
from rca.tools.traces import span_frame

CACHE_KEY = "logs.analysis"
MAX_LINES = 200_000  # per entity and query: far above a few minutes of any service's logs
# A template counts in the shift only when it is expected (or seen) at least this often.
MIN_TEMPLATE_COUNT = 4.0
NEW_ERROR_WEIGHT = 1.5  # a new error-level template says more than a new INFO one
# A pair (A, B) is expected when B accompanies A in at least this share of the reference units
# holding A, over at least this many units; it counts as broken only with this many broken units.
PAIR_FOLLOW = 0.9
MIN_PAIR_UNITS = 3
MIN_BROKEN_UNITS = 3
# C stands in for B after A (the code's other branch, not a cut path) when at least this share of the
# reference units holding A without B log C, and at most this share of those holding A and B do.
REPLACE_SHARE = 0.5
REPLACE_ALONGSIDE = 0.1
# Where a pair's break is looked for: the units since these shares of the observed span, and since
# these shares of the reference span (when the reference precedes the observed period).
LOOKS = (0.0, 1 / 3, 2 / 3)
EARLY_LOOKS = (1 / 3, 2 / 3)
# A pair break this significant after correcting for every pair tested (in sigmas) is a discovery, by
# the convention physics uses for a signal found with a look-elsewhere correction.
DISCOVERY_SIGMA = 5.0
# An entity compares with its own past only with at least this many reference lines.
MIN_OWN_REFERENCE = 10
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

# A statement id: a (dotted) logger name glued to a line number, as logback's `%logger#%line` writes.
_STATEMENT = re.compile(r"(?<![\w.$])((?:[A-Za-z_$][\w$]*\.)*[A-Z][\w$]*#\d+)\b")
_AFTER_STATEMENT = re.compile(r"#\d+\b(?:\s+TraceID: <ID>)?(?:\s+SpanID: <ID>)?\s*([^<:=]{0,60})")

# Cues that a problem line reports a failed call to someone else rather than the entity's own fault.
_CALL_FAILURE = re.compile(
    r"connection refused|connect timed out|read timed out|no instances available|"
    r"i/o error on|service unavailable|bad gateway|gateway timeout|\b5\d\d\b|"
    r"call(?:ing)? .{0,60}fail|failed to (?:call|connect|reach)|upstream",
    re.IGNORECASE,
)


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


@dataclass(frozen=True)
class PairStat:
    """One expected statement pair of one entity: A accompanied by B, reference vs observed."""

    first: str  # template A
    then: str  # template B
    units_reference: int  # units holding A before the break began (the reference, at least its start)
    broken_reference: int  # ... without B
    units_observed: int  # own units (not inherited) holding A since the break began
    broken_observed: int  # ... without B
    z: float


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
        return self.mode is not Mode.PEERS and self.lines_reference >= MIN_OWN_REFERENCE

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


def _entities(ctx: ToolContext) -> list[str]:
    return sorted({*ctx.graph.names(), ctx.alert.entity})


_COLUMNS = ["time", "entity", "severity", "body", "trace_id", "unit"]
_ANCHOR_COLUMNS = ["time", "entity", "trace_id", "unit", "template"]
SPAN_ANCHOR = "span "  # the pseudo-template of a span's start: `span RouteController.queryByIds`
SPAN_PATH_DEPTH = 4  # span names along a service's own call path, entry first


def _fetch(ctx: ToolContext, entities: Sequence[str], window: TimeWindow) -> pd.DataFrame:
    # The unit of a line: its span (one request's work in one service), else its trace.
    rows = [
        (r.time, r.entity, r.severity.value, r.body, r.trace_id, r.span_id or r.trace_id)
        for e in entities
        for r in ctx.source.logs(e, window, limit=MAX_LINES)
    ]
    return pd.DataFrame(rows, columns=_COLUMNS)


def _span_anchors(ctx: ToolContext) -> pd.DataFrame:
    """The start of every span of the investigation, as the first event of its unit (a log line's unit
    is its span id). Spans only anchor pairs; they are not log volume.

    A span is named by its path inside its service (`/routes/byIds/ > RouteController.queryByIds`):
    one controller method may serve two endpoints whose requests log different statements.
    """
    frame, _ = span_frame(ctx)
    spans = frame.drop_duplicates("span_id").rename(columns={"start": "time", "span_id": "unit"})
    by_id = spans.set_index("unit")
    path, up = spans["name"].astype(str), spans["parent"]
    for _ in range(SPAN_PATH_DEPTH - 1):
        same = up.map(by_id["entity"]).eq(spans["entity"])
        if not same.any():
            break
        path = path.where(~same, up.map(by_id["name"]).astype(str) + " > " + path)
        up = up.map(by_id["parent"]).where(same)
    return spans.assign(template=SPAN_ANCHOR + path)[_ANCHOR_COLUMNS]


def _templates(frame: pd.DataFrame) -> pd.Series:
    """The template of every line of one entity: its statement id when the line names one (a logger
    and line number such as `t.s.TravelServiceImpl#451`: exactly one statement of the code, which
    drain may merge with its neighbours), else its drain3 template (mined over distinct masked lines).
    """
    head = frame["body"].str.slice(0, BODY_CHARS)
    statement = head.str.extract(_STATEMENT, expand=False)
    masked = mask(head)
    miner = new_miner()
    ids: dict[str, int] = {}
    for line in pd.unique(masked[statement.isna()]):  # first-seen order: deterministic
        ids[line] = int(miner.add_log_message(line)["cluster_id"])
    texts = {c.cluster_id: c.get_template() for c in miner.drain.clusters}
    mined = masked.map(lambda line: texts.get(ids.get(line, -1), line))
    level = frame["severity"].str.upper()
    # The statement's text after the id, up to the first value (a mask, or a `name:` / `name=` whose
    # value may be free text such as a station name), keeps the summary readable.
    tail = masked.str.extract(_AFTER_STATEMENT, expand=False).fillna("")
    return statement.radd(level + " ").str.cat(tail, sep=" ").str.strip().where(statement.notna(), mined)


_PROBLEM = frozenset(s.value for s in Severity if s.is_problem)
_ERROR = frozenset({Severity.ERROR.value, Severity.FATAL.value})


def _error_templates(lines: pd.DataFrame) -> set[str]:
    """The templates of an entity's ERROR+ lines."""
    return set(lines.loc[lines["severity"].isin(_ERROR), "template"])


def _problem_flags(lines: pd.DataFrame) -> pd.Series:
    """Per template: whether any of its lines is WARN or worse."""
    return lines["severity"].isin(_PROBLEM).groupby(lines["template"]).max()


def _profile(entity: str, ref: pd.DataFrame, obs: pd.DataFrame, cmp: Comparison) -> LogProfile:
    """Volumes, the WARN+ burst and the template shift of one entity."""
    prof = LogProfile(entity, cmp.mode)
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
        # Only problem templates that appear or grow: INFO templates come and go with the workload
        # mix, and a code path that stopped completing shows better as a broken pair.
        prof.shift_z = float(z.where(relevant & counts["problem"], 0.0).clip(lower=0.0).max())
    return prof


@dataclass
class _Units:
    """One entity's units (span or trace of a request) as template-presence matrices, with the
    statement pairs its reference expects."""

    reference: pd.DataFrame  # units x templates, 0/1
    observed: pd.DataFrame
    traces: pd.Series  # observed unit -> trace id
    last: pd.Series  # observed unit -> time of its last step of progress (line or span start)
    early: list[np.ndarray]  # per look in EARLY_LOOKS, the reference units before it
    pairs: np.ndarray  # (k, 2) template positions: A (first) is expected with B (second)
    replaces: np.ndarray  # (k, templates) bool: C stands in for B after A (another branch of the code)

    def _breaks(self, presence: pd.DataFrame) -> np.ndarray:
        """Units x pairs: the unit holds A, neither B nor anything that stands in for B."""
        v = presence.to_numpy().astype(bool)
        replaced = (v.astype(np.int64) @ self.replaces.T.astype(np.int64)) > 0
        broken: np.ndarray = v[:, self.pairs[:, 0]] & ~v[:, self.pairs[:, 1]] & ~replaced
        return broken

    @cached_property
    def reference_breaks(self) -> np.ndarray:
        """Reference units x pairs (`_breaks` of the reference, computed once)."""
        return self._breaks(self.reference)

    @cached_property
    def observed_breaks(self) -> np.ndarray:
        """Observed units x pairs (`_breaks` of the observed period, computed once)."""
        return self._breaks(self.observed)

    @cached_property
    def broken(self) -> pd.Series:
        """Observed unit -> whether it broke an expected pair."""
        return pd.Series(self.observed_breaks.any(axis=1), index=self.observed.index)

    @cached_property
    def pair_stats(self) -> list[PairStat]:
        """`_pair_stats` over every observed unit (computed once: the marks and, when no unit is
        inherited, the entity's own pairs read it)."""
        return _pair_stats(self, pd.Series(True, index=self.observed.index))


def _presence(lines: pd.DataFrame) -> pd.DataFrame:
    """Units x templates, 1 where the unit logged the template (sorted labels, as a crosstab gives, but
    built with numpy: it runs once per entity and investigation)."""
    if lines.empty:
        return pd.DataFrame(dtype=np.int64)
    units, unit_labels = pd.factorize(lines["unit"], sort=True)
    templates, template_labels = pd.factorize(lines["template"], sort=True)
    known = (units >= 0) & (templates >= 0)
    matrix = np.zeros((len(unit_labels), len(template_labels)), dtype=np.int64)
    matrix[units[known], templates[known]] = 1
    return pd.DataFrame(
        matrix,
        index=pd.Index(unit_labels, name="unit"),
        columns=pd.Index(template_labels, name="template"),
    )


def _replacements(rv: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Per expected pair, the templates that stand in for B in the reference: most reference units
    holding A without B log them, and those holding A and B seldom do (the code's other branch)."""
    out = np.zeros((len(pairs), rv.shape[1]), dtype=bool)
    for k, (a, b) in enumerate(pairs):
        holding = rv[:, a].astype(bool)
        without, with_ = holding & ~rv[:, b].astype(bool), holding & rv[:, b].astype(bool)
        if without.any():
            stands_in = rv[without].mean(axis=0) >= REPLACE_SHARE
            out[k] = stands_in & (rv[with_].mean(axis=0) <= REPLACE_ALONGSIDE)
            out[k, [a, b]] = False
    return out


def _units(
    ref: pd.DataFrame, obs: pd.DataFrame, problems: Collection[str], errors: Collection[str], before: bool
) -> _Units | None:
    """Expected pairs from the reference units and which observed units broke one (vectorised).
    `problems` are the WARN+ templates (one of them no longer logged is no fault), `errors` the
    ERROR+ ones (a request that logged one failed); `before`: the reference precedes the observed
    period, so a break may have begun inside it (`EARLY_LOOKS`)."""
    ref, obs = ref.dropna(subset=["unit"]), obs.dropna(subset=["unit"])
    r = _presence(ref)
    if r.empty or obs.empty:
        return None
    o = _presence(obs).reindex(columns=r.columns, fill_value=0)
    problem = np.asarray(r.columns.isin(list(problems)), dtype=bool)
    error = np.asarray(r.columns.isin(list(errors)), dtype=bool)
    anchor = np.asarray(r.columns.str.startswith(SPAN_ANCHOR), dtype=bool)
    times = _last_progress(ref, problems, r.index).to_numpy()
    first, span = float(np.nanmin(times)), float(np.nanmax(times) - np.nanmin(times))
    early = [times < first + share * span for share in EARLY_LOOKS] if before else []
    rv = r.to_numpy()
    # Pairs the whole reference expects, then those only its earlier part does (a fault may have
    # begun before the observed period, so the reference's end already breaks them).
    found: dict[tuple[int, int], np.ndarray] = {}
    for part in [np.ones(len(times), dtype=bool), *early]:
        pairs, replaces = _expected(rv[part], problem, error, anchor)
        for (a, b), stands_in in zip(map(tuple, pairs), replaces, strict=True):
            found.setdefault((int(a), int(b)), stands_in)
    pairs = np.array(sorted(found), dtype=np.int64).reshape(-1, 2)
    replaces = np.array([found[(int(a), int(b))] for a, b in pairs], dtype=bool).reshape(-1, rv.shape[1])
    traces = obs.drop_duplicates("unit").set_index("unit")["trace_id"].reindex(o.index)
    return _Units(r, o, traces, _last_progress(obs, problems, o.index), early, pairs, replaces)


def _expected(
    rv: np.ndarray, problem: np.ndarray, error: np.ndarray, anchor: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, replacements) that reference units `rv` (units x templates, 0/1) expect."""
    together = rv.T @ rv  # A row, B column: reference units holding both
    # A reference unit that holds A, lacks B and logged an error failed before B: it shows where the
    # request broke, not that B is optional (a reference holding some failures still shows the path).
    erred = np.asarray(rv[:, error].sum(axis=1) > 0, dtype=np.int64)
    failed = (rv * erred[:, None]).T @ (1 - rv)
    trials = np.diag(together)[:, None] - failed
    with np.errstate(divide="ignore", invalid="ignore"):
        follow = np.where(trials > 0, together / np.maximum(trials, 1), 0.0)
    mask_ = (follow >= PAIR_FOLLOW) & (trials >= MIN_PAIR_UNITS)
    np.fill_diagonal(mask_, False)
    # A span start is only ever the first of a pair: a line whose span fell outside the fetched
    # periods (or was never recorded) has not lost anything.
    mask_[:, anchor] = False
    mask_[:, problem] = False
    pairs = np.argwhere(mask_)
    replaces = _replacements(rv, pairs)
    # An error path taken instead of B is the failure itself, however often it was taken before.
    replaces[:, error] = False
    return pairs, replaces


def _last_progress(lines: pd.DataFrame, problems: Collection[str], index: pd.Index) -> pd.Series:
    """Per unit, the time of its last step of progress: a problem line the unit logs after a failed
    call (`call to pay failed`) reports the failure, it is not work the unit did before it."""
    progress = lines[~lines["template"].isin(list(problems))]
    first = lines.groupby("unit")["time"].min()
    return progress.groupby("unit")["time"].max().reindex(first.index).fillna(first).reindex(index)


def _pair_stats(units: _Units, own: pd.Series) -> list[PairStat]:
    """Expected pairs with their reference and own observed break counts, most broken first.

    The break is looked for where it may have begun, as a change-point split of the units in time:
    - at the observed period's start, and at later `LOOKS` (the onset hint is early, or the fault
      takes a while to bite): the units since the look against the reference and the observed units
      before it (what the entity did before the break began);
    - at the `EARLY_LOOKS` into the reference, when it precedes the observed period (the alert came
      late, or the fault was already there): the reference units since the look and every observed
      unit against the reference units before it.
    The strongest look is kept, its surprise discounted for the number of looks (Bonferroni); its
    counts are the ones reported.
    """
    keep = own.reindex(units.observed.index, fill_value=True).to_numpy()
    r, o = units.reference, units.observed[keep]
    if len(units.pairs) == 0 or o.empty:
        return []
    a_idx, b_idx = units.pairs[:, 0], units.pairs[:, 1]
    ref_holds, ref_breaks = r.to_numpy()[:, a_idx], units.reference_breaks
    holds, breaks = o.to_numpy()[:, a_idx], units.observed_breaks[keep]
    times = units.last.to_numpy()[keep]
    first, span = float(np.nanmin(times)), float(np.nanmax(times) - np.nanmin(times))
    best = np.full(len(a_idx), -np.inf)
    counts = np.zeros((4, len(a_idx)), np.int64)  # before: units, broken; since: units, broken
    # (reference units before the look, observed units before it)
    looks = [(before, np.zeros(len(times), dtype=bool)) for before in units.early]
    looks += [(np.ones(len(r), dtype=bool), times < first + share * span) for share in LOOKS]
    for ref_before, obs_before in looks:
        look_counts = np.stack(
            [
                ref_holds[ref_before].sum(axis=0) + holds[obs_before].sum(axis=0),
                ref_breaks[ref_before].sum(axis=0) + breaks[obs_before].sum(axis=0),
                ref_holds[~ref_before].sum(axis=0) + holds[~obs_before].sum(axis=0),
                ref_breaks[~ref_before].sum(axis=0) + breaks[~obs_before].sum(axis=0),
            ]
        )
        z = proportion_z(look_counts[1], look_counts[0], look_counts[3], look_counts[2])
        z = np.where(look_counts[3] >= MIN_BROKEN_UNITS, z, np.minimum(z, 0.0))
        better = z > best
        best = np.where(better, z, best)
        counts = np.where(better, look_counts, counts)
    z = np.where(best > 0, norm.isf(np.minimum(0.5, norm.sf(best) * len(looks))), best)
    cols = r.columns
    stats = [
        PairStat(str(cols[a]), str(cols[b]), int(nr), int(br), int(no), int(bo), float(zz))
        for a, b, nr, br, no, bo, zz in zip(a_idx, b_idx, *counts, z, strict=True)
    ]
    return sorted(stats, key=lambda s: (-s.z, s.first, s.then))


def _blame(entity: str, problems: pd.Series, names: Sequence[str]) -> tuple[dict[str, int], int]:
    """(lines naming each other entity, lines with a call-failure cue) among an entity's problem lines."""
    # Distinct lines once each (a burst repeats a few lines many times), in plain Python: a pandas
    # string call per entity name costs more than the handful of lines it would scan.
    lines = problems.str.lower().value_counts()
    named = {n: sum(k for text, k in lines.items() if n.lower() in str(text)) for n in names if n != entity}
    cue = sum(k for text, k in lines.items() if _CALL_FAILURE.search(str(text)))
    return {n: int(k) for n, k in named.items() if k > 0}, int(cue)


def _significant_breaks(u: _Units) -> pd.Series:
    """Per observed unit: whether it broke a pair that breaks clearly more often than before onset."""
    cols = u.reference.columns
    significant = {(s.first, s.then) for s in u.pair_stats if s.z >= KNEE}
    chosen = np.array([(str(cols[a]), str(cols[b])) in significant for a, b in u.pairs], dtype=bool)
    return pd.Series(u.observed_breaks[:, chosen].any(axis=1), index=u.observed.index)


def _marked_traces(
    units: dict[str, _Units], observed: dict[str, pd.DataFrame], profiles: dict[str, LogProfile]
) -> dict[str, pd.Series]:
    """Per entity, the observed traces in which it did what it did not do before onset (broke a pair
    that now breaks clearly more often, or logged a problem line of a new or grown template), each
    with the time of the latest such event. Routine problem lines and the usual share of broken
    pairs explain nobody's breaks."""
    marks: dict[str, pd.Series] = {}
    for entity, obs in observed.items():
        templates = profiles[entity].templates
        grown = {t.template for t in templates if t.problem and (t.z >= KNEE or t.reference == 0)}
        lines = obs.loc[obs["template"].isin(grown)]
        times = [lines.groupby("trace_id")["time"].max()]
        u = units.get(entity)
        if u is not None:
            broke = _significant_breaks(u)
            times.append(u.last[broke].groupby(u.traces[broke]).max())
        found = pd.concat(times)
        marks[entity] = found.groupby(level=0).max() if not found.empty else found
    return marks


def _discount_blamed(
    ctx: ToolContext, profiles: dict[str, LogProfile], blame: dict[str, tuple[dict[str, int], int]]
) -> None:
    """Own scores: burst and shift net of the entity its failed-call lines blame."""
    for p in profiles.values():  # every raw score first: the discount reads the culprit's
        p.raw = max(0.0, p.burst_z, p.shift_z, p.pair_z)
    for entity, p in profiles.items():
        noisy = max(0.0, p.burst_z, p.shift_z)
        named, cue = blame.get(entity, ({}, 0))
        suspects = named or ({c: cue for c in ctx.graph.callees(entity) if c != entity} if cue else {})
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


def analyse(ctx: ToolContext) -> LogAnalysis:
    """Profile every entity's logs once per investigation (cached in `ctx.cache`)."""
    cached = ctx.cache.get(CACHE_KEY)
    if isinstance(cached, LogAnalysis):
        return cached
    entities = _entities(ctx)
    frame, cmp = fetch_compared(ctx, lambda w: _fetch(ctx, entities, w), "time")
    profiles: dict[str, LogProfile] = {}
    blame: dict[str, tuple[dict[str, int], int]] = {}
    units: dict[str, _Units] = {}
    observed: dict[str, pd.DataFrame] = {}
    groups = dict(tuple(frame.groupby("entity", sort=True))) if not frame.empty else {}
    anchors = _span_anchors(ctx) if cmp.reference is not None else pd.DataFrame(columns=_ANCHOR_COLUMNS)
    anchor_groups = dict(tuple(anchors.groupby("entity", sort=True))) if not anchors.empty else {}
    for entity in entities:
        lines = groups.get(entity)
        if lines is None or lines.empty:
            profiles[entity] = LogProfile(entity, cmp.mode, minutes_observed=cmp.observed.seconds / 60.0)
            continue
        lines = lines.assign(template=_templates(lines))
        ref, obs = cmp.split(lines, "time")
        profiles[entity] = _profile(entity, ref, obs, cmp)
        observed[entity] = obs
        blame[entity] = _blame(entity, obs.loc[obs["severity"].isin(_PROBLEM), "body"], entities)
        if cmp.reference is None:
            continue
        spans = anchor_groups.get(entity)
        if spans is not None:
            span_ref, span_obs = cmp.split(spans, "time")
            ref, obs = pd.concat([ref, span_ref]), pd.concat([obs, span_obs])
        problems = {t.template for t in profiles[entity].templates if t.problem}
        found = _units(ref, obs, problems, _error_templates(lines), cmp.mode is not Mode.LATER)
        if found is not None:
            units[entity] = found
    _own_pairs(ctx, profiles, units, observed)
    if cmp.mode is Mode.PEERS:
        # No reference: an entity's problem rate against the other entities' (floor: 1 line/minute).
        rates = {e: p.problem_rate_observed for e, p in profiles.items()}
        for e, z in robust_peer_z(rates, floor=1.0).items():
            profiles[e].burst_z = z
    _discount_blamed(ctx, profiles, blame)
    result = LogAnalysis(cmp, profiles)
    ctx.cache[CACHE_KEY] = result
    return result


def _own_pairs(
    ctx: ToolContext,
    profiles: dict[str, LogProfile],
    units: dict[str, _Units],
    observed: dict[str, pd.DataFrame],
) -> None:
    """Pair breaks per entity, leaving out units broken in traces where a service it depends on
    (directly or not) later broke a pair or logged a problem that it did not before: the break came
    from below."""
    if not units:
        return
    marks = _marked_traces(units, observed, profiles)
    g = ctx.digraph
    for entity, u in units.items():
        below = [marks[d] for d in (nx.descendants(g, entity) if entity in g else ()) if d in marks]
        # A break is the callee's doing only when the callee went wrong after the unit's last event:
        # a failed call that the unit logged past did not stop it.
        latest = pd.concat(below).groupby(level=0).max() if below else pd.Series(dtype=np.float64)
        inherited = u.broken & (u.traces.map(latest) >= u.last)
        prof = profiles[entity]
        prof.inherited_units = int(inherited.sum())
        prof.pairs = _pair_stats(u, ~inherited) if inherited.any() else u.pair_stats
        prof.pair_z = max(0.0, prof.pairs[0].z) if prof.pairs else 0.0


def log_profile(ctx: ToolContext, entity: str) -> LogProfile:
    """The entity's log profile (an empty one for an entity without logs)."""
    analysis = analyse(ctx)
    return analysis.profiles.get(entity) or LogProfile(entity, analysis.comparison.mode)


def entity_scores(ctx: ToolContext) -> dict[str, float]:
    """Own-origin log score (z-like, >= 0, ~3 is noise) of every entity, for seeding."""
    return {e: p.own for e, p in analyse(ctx).profiles.items()}


def kind_hint(ctx: ToolContext, entity: str) -> FaultKind | None:
    """ERRORS when the entity's own log signal moved (a broken pair, new error templates, a WARN+
    burst); None when its logs say nothing."""
    return FaultKind.ERRORS if log_profile(ctx, entity).own >= KNEE else None


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


class LogsTool:
    """Is `entity` the origin of the fault, by its logs?"""

    name = "logs"
    source = Source.LOGS

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Score the entity's own log anomaly (pair breaks, bursts and template shift net of blame)."""
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
        pair = prof.broken
        if pair is not None and pair.z >= KNEE:
            parts.append(
                f"'{_short(pair.first)}' no longer followed by '{_short(pair.then)}' "
                f"({pair.broken_observed}/{pair.units_observed} vs "
                f"{pair.broken_reference}/{pair.units_reference} before; "
                f"{analysis.pair_sigma(entity):.1f} sigma over {analysis.pairs_tested} pairs tested)"
            )
        new = prof.new_templates
        if new:
            parts.append(f"{len(new)} new templates, e.g. '{_short(new[0].template)}'")
        top = prof.top
        if top is not None and top.z < -KNEE:
            parts.append(f"collapsed: '{_short(top.template)}' {top.reference} -> {top.observed}")
        if prof.blamed and prof.own < prof.raw:
            parts.append(f"{prof.blamed_share:.0%} of its problems are failed calls to {prof.blamed}")
        if prof.inherited_units:
            parts.append(f"{prof.inherited_units} broken requests follow failures below it")
        if not prof.own_reference:
            parts.append("too few lines of its own before onset to compare")
        parts.append(f"own score {prof.own:.1f} of {prof.raw:.1f}")
        ratio = (
            prof.problem_rate_observed / prof.problem_rate_reference
            if prof.problem_rate_reference > 0
            else (math.inf if prof.problem_rate_observed > 0 else 1.0)
        )
        lead = analysis.lead(entity)
        measurements: dict[str, float | str] = {
            "mode": analysis.comparison.mode.value,
            "problem_lines": prof.problems_observed,
            "problem_lines_reference": prof.problems_reference,
            "lines_reference": prof.lines_reference,
            "error_lines": prof.errors_observed,
            "rate_per_min": round(prof.problem_rate_observed, 3),
            "rate_per_min_reference": round(prof.problem_rate_reference, 3),
            "rate_ratio": round(ratio, 3) if math.isfinite(ratio) else "inf",
            "new_templates": len(new),
            "new_error_templates": sum(1 for t in new if t.problem),
            "burst_z": round(prof.burst_z, 3),
            "shift_z": round(prof.shift_z, 3),
            "pair_z": round(prof.pair_z, 3),
            "pair_sigma_corrected": round(analysis.pair_sigma(entity), 3),
            "inherited_units": prof.inherited_units,
            "raw_z": round(prof.raw, 3),
            "own_z": round(prof.own, 3),
            "lead": round(lead, 3) if math.isfinite(lead) else "inf",
        }
        if top is not None:
            measurements["top_template"] = _short(top.template)
        if pair is not None:
            measurements["broken_pair"] = f"{_short(pair.first)} -> {_short(pair.then)}"
        if prof.blamed:
            measurements["blamed"] = prof.blamed
        return ToolResult(
            summary="; ".join(parts),
            signals={"anomaly_score": round(score(analysis, entity), 4)},
            measurements=measurements,
        )
