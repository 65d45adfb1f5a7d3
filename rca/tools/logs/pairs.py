"""Statement pairs: in the reference units (a request's lines in one service), statement A is almost
always accompanied by statement B; after onset A is still logged but B is missing, so the code path
between them stopped completing. Pure functions over the units' template-presence matrices."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np
import pandas as pd
from scipy.stats import norm

from rca.tools.counts import proportion_z
from rca.tools.stats import KNEE

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
SPAN_ANCHOR = "span "  # the pseudo-template of a span's start: `span OrderController.place`


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
class Units:
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
        return pair_stats(self, pd.Series(True, index=self.observed.index))


def presence(lines: pd.DataFrame) -> pd.DataFrame:
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


def replacements(rv: np.ndarray, pairs: np.ndarray) -> np.ndarray:
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


def units(
    ref: pd.DataFrame, obs: pd.DataFrame, problems: Collection[str], errors: Collection[str], before: bool
) -> Units | None:
    """Expected pairs from the reference units and which observed units broke one (vectorised).
    `problems` are the WARN+ templates (one of them no longer logged is no fault), `errors` the
    ERROR+ ones (a request that logged one failed); `before`: the reference precedes the observed
    period, so a break may have begun inside it (`EARLY_LOOKS`)."""
    ref, obs = ref.dropna(subset=["unit"]), obs.dropna(subset=["unit"])
    r = presence(ref)
    if r.empty or obs.empty:
        return None
    o = presence(obs).reindex(columns=r.columns, fill_value=0)
    problem = np.asarray(r.columns.isin(list(problems)), dtype=bool)
    error = np.asarray(r.columns.isin(list(errors)), dtype=bool)
    anchor = np.asarray(r.columns.str.startswith(SPAN_ANCHOR), dtype=bool)
    times = last_progress(ref, problems, r.index).to_numpy()
    first, span = float(np.nanmin(times)), float(np.nanmax(times) - np.nanmin(times))
    early = [times < first + share * span for share in EARLY_LOOKS] if before else []
    rv = r.to_numpy()
    # Pairs the whole reference expects, then those only its earlier part does (a fault may have
    # begun before the observed period, so the reference's end already breaks them).
    found: dict[tuple[int, int], np.ndarray] = {}
    for part in [np.ones(len(times), dtype=bool), *early]:
        pairs, replaces = expected(rv[part], problem, error, anchor)
        for (a, b), stands_in in zip(map(tuple, pairs), replaces, strict=True):
            found.setdefault((int(a), int(b)), stands_in)
    pairs = np.array(sorted(found), dtype=np.int64).reshape(-1, 2)
    replaces = np.array([found[(int(a), int(b))] for a, b in pairs], dtype=bool).reshape(-1, rv.shape[1])
    traces = first_trace(obs).reindex(o.index)
    return Units(r, o, traces, last_progress(obs, problems, o.index), early, pairs, replaces)


def expected(
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
    replaces = replacements(rv, pairs)
    # An error path taken instead of B is the failure itself, however often it was taken before.
    replaces[:, error] = False
    return pairs, replaces


def first_trace(lines: pd.DataFrame) -> pd.Series:
    """Per unit (sorted), the trace id of its first line (with numpy: it runs once per entity)."""
    codes, labels = pd.factorize(lines["unit"], sort=True)
    known = np.flatnonzero(codes >= 0)
    _, first = np.unique(codes[known], return_index=True)
    return pd.Series(lines["trace_id"].to_numpy()[known[first]], index=labels)


def last_progress(lines: pd.DataFrame, problems: Collection[str], index: pd.Index) -> pd.Series:
    """Per unit, the time of its last step of progress: a problem line the unit logs after a failed
    call (`call to pay failed`) reports the failure, it is not work the unit did before it."""
    # Grouped with numpy over the unit codes: it runs twice per entity and investigation.
    codes, labels = pd.factorize(lines["unit"], sort=True)
    known = codes >= 0
    time = lines["time"].to_numpy(dtype=np.float64)[known]
    codes = codes[known]
    progress = ~lines["template"].isin(list(problems)).to_numpy()[known]
    first = np.full(len(labels), np.nan)
    np.fmin.at(first, codes, time)
    last = np.full(len(labels), np.nan)
    np.fmax.at(last, codes[progress], time[progress])
    return pd.Series(np.where(np.isnan(last), first, last), index=labels).reindex(index)


def pair_stats(units: Units, own: pd.Series) -> list[PairStat]:
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


def significant_breaks(u: Units) -> pd.Series:
    """Per observed unit: whether it broke a pair that breaks clearly more often than before onset."""
    cols = u.reference.columns
    significant = {(s.first, s.then) for s in u.pair_stats if s.z >= KNEE}
    chosen = np.array([(str(cols[a]), str(cols[b])) in significant for a, b in u.pairs], dtype=bool)
    return pd.Series(u.observed_breaks[:, chosen].any(axis=1), index=u.observed.index)


def marked_traces(
    units: Mapping[str, Units], observed: Mapping[str, pd.DataFrame], grown: Mapping[str, Collection[str]]
) -> dict[str, pd.Series]:
    """Per entity, the observed traces in which it did what it did not do before onset (broke a pair
    that now breaks clearly more often, or logged a problem line of a new or grown template, `grown`),
    each with the time of the latest such event. Routine problem lines and the usual share of broken
    pairs explain nobody's breaks."""
    marks: dict[str, pd.Series] = {}
    for entity, obs in observed.items():
        lines = obs.loc[obs["template"].isin(list(grown.get(entity, ())))]
        times = [lines.groupby("trace_id")["time"].max()]
        u = units.get(entity)
        if u is not None:
            broke = significant_breaks(u)
            times.append(u.last[broke].groupby(u.traces[broke]).max())
        found = pd.concat(times)
        marks[entity] = found.groupby(level=0).max() if not found.empty else found
    return marks


def own_pairs(
    g: nx.DiGraph,
    units: Mapping[str, Units],
    observed: Mapping[str, pd.DataFrame],
    grown: Mapping[str, Collection[str]],
) -> dict[str, tuple[int, list[PairStat]]]:
    """Per entity, its pair breaks (with how many broken units it inherited), leaving out units broken in
    traces where a service it depends on (directly or not) later broke a pair or logged a problem that
    it did not before: the break came from below."""
    if not units:
        return {}
    marks = marked_traces(units, observed, grown)
    out: dict[str, tuple[int, list[PairStat]]] = {}
    for entity, u in units.items():
        below = [marks[d] for d in (nx.descendants(g, entity) if entity in g else ()) if d in marks]
        # A break is the callee's doing only when the callee went wrong after the unit's last event:
        # a failed call that the unit logged past did not stop it.
        latest = pd.concat(below).groupby(level=0).max() if below else pd.Series(dtype=np.float64)
        inherited = u.broken & (u.traces.map(latest) >= u.last)
        out[entity] = (int(inherited.sum()), pair_stats(u, ~inherited) if inherited.any() else u.pair_stats)
    return out
