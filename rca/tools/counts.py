"""Reference periods and count statistics shared by the record-level tools (logs, traces).

Logs and spans are compared between a reference period (normal behaviour) and an observed period
(the incident). `fetch_compared` chooses the two:

1. the baseline window, when it holds enough records (of enough of the observed entities);
2. else every record before the onset hint less `ONSET_LAG` (alerts fire after a fault starts,
   often a minute or two later), reaching back up to `LOOKBACK` before the incident window to find
   an earlier recording (a recorded case often holds a separate normal minute, far from the fault);
3. else the records before the onset hint itself;
4. else a recording after the incident window, up to `LOOKBACK` later (a recorded case may hold its
   normal period after the fault; a live source has none, as nothing has happened yet);
5. else no reference: each entity is compared with the other entities (peers), which is weaker
   evidence and must never support a hypothesis on its own.

The observed period starts `ONSET_LAG` before the onset hint, for the same reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pandas as pd

from rca.telemetry.model import TimeWindow
from rca.tools.base import ToolContext
from rca.tools.stats import MAD_TO_SIGMA

# A reference period needs this many records (all entities together) spread over this many seconds.
MIN_REFERENCE_RECORDS = 30
MIN_REFERENCE_SECONDS = 20.0
# ... and records of at least this share of the entities the observed period has records of: a sliver
# where most services are silent (the tail of a separate recording) is no picture of their normal.
MIN_REFERENCE_COVERAGE = 0.5
# How long an alert may lag the fault it reports: records this close before the hint may be faulty.
ONSET_LAG = 120.0
# How far before the incident window to look for an earlier recording when the baseline is empty.
LOOKBACK = 12 * 3600.0


class ReferenceKind(StrEnum):
    """Where the reference behaviour comes from."""

    BASELINE = "baseline"  # the baseline window
    PRE_ONSET = "pre-onset"  # records before the onset hint (an earlier recording included)
    LATER = "later"  # a recording after the incident window (nothing before it)
    PEERS = "peers"  # no reference: each entity against the other entities


@dataclass(frozen=True)
class Comparison:
    """The reference and observed periods of one analysis, clipped to where data exists."""

    kind: ReferenceKind
    reference: TimeWindow | None
    observed: TimeWindow

    @property
    def note(self) -> str:
        """A few words for summaries on how the comparison was made."""
        if self.kind is ReferenceKind.BASELINE:
            return "vs baseline"
        if self.kind is ReferenceKind.PRE_ONSET:
            return "vs pre-onset records (baseline empty)"
        if self.kind is ReferenceKind.LATER:
            return "vs a later recording (nothing before onset)"
        return "vs other services (no pre-onset data)"

    def split(self, frame: pd.DataFrame, column: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(reference rows, observed rows) of `frame` by its time `column`."""
        t = frame[column]
        obs = frame[(t >= self.observed.start) & (t < self.observed.end)]
        if self.reference is None:
            return frame.iloc[0:0], obs
        return frame[(t >= self.reference.start) & (t < self.reference.end)], obs


def _clip(window: TimeWindow, first: float, last: float) -> TimeWindow | None:
    start, end = max(window.start, first), min(window.end, last)
    return TimeWindow(start, end) if end > start else None


def comparison(
    ctx: ToolContext,
    times: Sequence[float] | np.ndarray,
    entities: Sequence[str] | np.ndarray | None = None,
) -> Comparison:
    """Choose the reference for records at `times` (every entity's, one modality; `entities` names
    each record's entity); see the module.

    Windows are clipped to the data's own extent, so that rates are per minute of recorded data,
    not of an empty window edge.
    """
    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        return Comparison(ReferenceKind.PEERS, None, ctx.incident)
    first, last = float(t.min()), float(np.nextafter(t.max(), math.inf))
    keys = None if entities is None else np.asarray(entities, dtype=object)

    def enough(window: TimeWindow | None, versus: TimeWindow | None) -> bool:
        if window is None:
            return False
        inside = (t >= window.start) & (t < window.end)
        if inside.sum() < MIN_REFERENCE_RECORDS or float(np.ptp(t[inside])) < MIN_REFERENCE_SECONDS:
            return False
        if keys is None or versus is None:
            return True
        wanted = set(keys[(t >= versus.start) & (t < versus.end)])
        return len(wanted & set(keys[inside])) >= MIN_REFERENCE_COVERAGE * len(wanted)

    onset = min(max(ctx.onset, ctx.incident.start), ctx.incident.end)
    lagged = max(ctx.incident.start, onset - ONSET_LAG)
    observed = _clip(TimeWindow(lagged, ctx.incident.end), first, last)
    base = _clip(ctx.baseline, first, last)
    if (
        observed is not None
        and base is not None
        and base.end <= observed.start + 1e-9
        and enough(base, observed)
    ):
        return Comparison(ReferenceKind.BASELINE, base, observed)
    for split in (lagged, onset):
        if split <= first:
            continue
        pre = TimeWindow(first, split)
        post = _clip(TimeWindow(split, ctx.incident.end), first, last)
        if post is not None and enough(pre, post):
            return Comparison(ReferenceKind.PRE_ONSET, pre, post)
    later = TimeWindow(ctx.incident.end, max(ctx.incident.end, last))
    if observed is not None and enough(later, observed):
        return Comparison(ReferenceKind.LATER, later, observed)
    return Comparison(ReferenceKind.PEERS, None, _clip(ctx.incident, first, last) or ctx.incident)


def fetch_compared(
    ctx: ToolContext, fetch: Callable[[TimeWindow], pd.DataFrame], column: str
) -> tuple[pd.DataFrame, Comparison]:
    """Records from the baseline and incident windows; an earlier recording when the baseline is
    empty, and a later one when nothing precedes the incident (each fetched only then: a long look
    is costly on a live backend); with their comparison.
    """
    start = min(ctx.baseline.start, ctx.incident.start)
    end = max(ctx.baseline.end, ctx.incident.end)

    def compare(records: pd.DataFrame) -> Comparison:
        entities = records["entity"].to_numpy() if "entity" in records else None
        return comparison(ctx, records[column].to_numpy(), entities)

    frame = fetch(TimeWindow(start, end))
    cmp = compare(frame)
    if cmp.kind is not ReferenceKind.BASELINE and start > ctx.incident.start - LOOKBACK:
        earlier = fetch(TimeWindow(ctx.incident.start - LOOKBACK, start))
        if not earlier.empty:
            frame = pd.concat([earlier, frame], ignore_index=True)
            cmp = compare(frame)
    if cmp.kind is ReferenceKind.PEERS:
        later = fetch(TimeWindow(end, ctx.incident.end + LOOKBACK))
        if not later.empty:
            frame = pd.concat([frame, later], ignore_index=True)
            cmp = compare(frame)
    return frame, cmp


def robust_peer_z(values: dict[str, float], floor: float) -> dict[str, float]:
    """Each value's robust z against all the values (median and MAD; the spread floored)."""
    if not values:
        return {}
    arr = np.array(list(values.values()), dtype=np.float64)
    med = float(np.median(arr))
    spread = max(float(np.median(np.abs(arr - med))) * MAD_TO_SIGMA, floor)
    return {k: (v - med) / spread for k, v in values.items()}


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


def proportion_z(
    hits_reference: np.ndarray, n_reference: np.ndarray, hits_observed: np.ndarray, n_observed: np.ndarray
) -> np.ndarray:
    """Signed two-proportion z (pooled variance) of observed vs reference hit rates; 0 where either
    period has no trials. Used for "A no longer followed by B": hits are the A's left without B."""
    hr, nr = np.asarray(hits_reference, np.float64), np.asarray(n_reference, np.float64)
    ho, no = np.asarray(hits_observed, np.float64), np.asarray(n_observed, np.float64)
    valid = (nr > 0) & (no > 0)
    nr_, no_ = np.where(valid, nr, 1.0), np.where(valid, no, 1.0)
    pooled = (hr + ho) / (nr_ + no_)
    # The pooled variance is floored as if one more trial of each outcome had been seen, so that
    # 0/3 -> 3/3 is not infinitely surprising.
    var = np.maximum(pooled * (1.0 - pooled), 1.0 / (nr_ + no_ + 2.0)) * (1.0 / nr_ + 1.0 / no_)
    return np.where(valid, (ho / no_ - hr / nr_) / np.sqrt(var), 0.0)


def lead(scores: Mapping[str, float], entity: str) -> float:
    """The entity's score over the strongest other entity's (inf when no other scored)."""
    rival = max((v for e, v in scores.items() if e != entity), default=0.0)
    return scores.get(entity, 0.0) / rival if rival > 0 else math.inf
