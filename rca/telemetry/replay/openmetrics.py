"""A timestamped OpenMetrics exposition: counters, gauges and histograms gathered point by point, then
written as the text `promtool tsdb create-blocks-from openmetrics` backfills.

Counters are gathered as *increments* at scrape times and written cumulatively, so they are monotone by
construction; several sources may add to one counter (their increments at one time add up). Gauges keep the
last value given for a time. Times are snapped by the caller to a scrape grid, so every series of a grid
has its samples at the same instants, as a real scrape would give.

Written by hand rather than through `prometheus_client`'s exposition: that builds one sample object per
point and the whole text in memory (about 5 s per 360,000 points here), while a replayed day holds millions
of points; this writer formats a series' points in one pass and streams them to the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TextIO

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
Labels = tuple[tuple[str, str], ...]


class Kind(StrEnum):
    """OpenMetrics metric types the replay writes."""

    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


@dataclass(frozen=True)
class Family:
    """One metric family: its name as written in `# TYPE` (a counter's without `_total`)."""

    name: str
    kind: Kind
    help: str
    unit: str = ""  # OpenMetrics requires the name to end with `_<unit>` when a unit is given
    bounds: tuple[float, ...] = ()  # histogram bucket upper bounds, ascending, without +Inf

    def __post_init__(self) -> None:
        if self.unit and not self.name.endswith("_" + self.unit):
            raise ValueError(f"{self.name}: a family with unit {self.unit} must end with _{self.unit}")
        if self.kind is Kind.HISTOGRAM and list(self.bounds) != sorted(set(self.bounds)):
            raise ValueError(f"{self.name}: bucket bounds must be strictly ascending")


def labels_of(mapping: Mapping[str, str]) -> Labels:
    """A label set in canonical (sorted) form, empty values dropped (Prometheus treats them as absent)."""
    return tuple(sorted((k, v) for k, v in mapping.items() if v != ""))


@dataclass
class _Series:
    times: list[npt.NDArray[np.int64]] = field(default_factory=list)  # milliseconds
    values: list[FloatArray] = field(default_factory=list)  # counters/gauges: (n,); histograms: (n, B+2)


class Exposition:
    """Series gathered for one replay; `write` emits them as OpenMetrics text ending in `# EOF`."""

    def __init__(self) -> None:
        self._families: dict[str, Family] = {}
        self._series: dict[str, dict[Labels, _Series]] = {}

    def _slot(self, family: Family, labels: Mapping[str, str]) -> _Series:
        known = self._families.setdefault(family.name, family)
        if known != family:
            raise ValueError(f"metric family {family.name} declared twice differently")
        return self._series.setdefault(family.name, {}).setdefault(labels_of(labels), _Series())

    def add(self, family: Family, labels: Mapping[str, str], times: FloatArray, values: FloatArray) -> None:
        """Counter increments or gauge values of one series at `times` (unix seconds); NaNs are skipped."""
        if family.kind is Kind.HISTOGRAM:
            raise TypeError(f"{family.name} is a histogram: use add_histogram")
        keep = np.isfinite(values) & np.isfinite(times)
        kept = np.asarray(values[keep], dtype=np.float64)
        if family.kind is Kind.COUNTER:
            kept = np.clip(kept, 0.0, None)  # a counter never goes down; a negative increment is noise
        slot = self._slot(family, labels)
        slot.times.append(_millis(times[keep]))
        slot.values.append(kept)

    def add_histogram(
        self,
        family: Family,
        labels: Mapping[str, str],
        times: FloatArray,
        bucket_increments: FloatArray,
        sum_increments: FloatArray,
    ) -> None:
        """Increments of one histogram series: per time, the count added to each bucket (not cumulative
        over `le`: column j counts observations in (bounds[j-1], bounds[j]], the last column those above
        the last bound) and to `_sum`. Rows with a NaN are skipped."""
        if family.kind is not Kind.HISTOGRAM:
            raise TypeError(f"{family.name} is not a histogram")
        width = len(family.bounds) + 1
        if bucket_increments.ndim != 2 or bucket_increments.shape[1] != width:
            raise ValueError(f"{family.name}: expected {width} bucket columns")
        keep = np.isfinite(times) & np.isfinite(bucket_increments).all(axis=1) & np.isfinite(sum_increments)
        per_bucket = np.clip(bucket_increments[keep], 0.0, None)
        slot = self._slot(family, labels)
        slot.times.append(_millis(times[keep]))
        slot.values.append(np.column_stack([per_bucket, np.clip(sum_increments[keep], 0.0, None)]))

    def families(self) -> list[Family]:
        """The families gathered so far, by name."""
        return [self._families[n] for n in sorted(self._families)]

    def series_count(self) -> dict[str, int]:
        """Number of Prometheus series per family (a histogram counts each bucket, `_count` and `_sum`)."""
        out = {}
        for name, family in self._families.items():
            per = len(family.bounds) + 3 if family.kind is Kind.HISTOGRAM else 1
            out[name] = per * len(self._series[name])
        return dict(sorted(out.items()))

    def has_series(self, family: Family, **match: str) -> bool:
        """Whether `family` holds a series whose labels include every `match` pair."""
        wanted = set(match.items())
        return any(wanted <= set(labels) for labels in self._series.get(family.name, {}))

    def sample_times(self, label: str) -> dict[str, FloatArray]:
        """Per value of `label`, the times (unix seconds) at which a series carrying it has a sample."""
        found: dict[str, list[npt.NDArray[np.int64]]] = {}
        for slots in self._series.values():
            for labels, slot in slots.items():
                value = dict(labels).get(label)
                if value is not None:
                    found.setdefault(value, []).extend(slot.times)
        return {value: np.unique(np.concatenate(times)) / 1000.0 for value, times in sorted(found.items())}

    def earliest(self) -> float | None:
        """The earliest sample time (unix seconds) of any series, None when nothing was added."""
        firsts = [
            int(t.min()) for slots in self._series.values() for s in slots.values() for t in s.times if t.size
        ]
        return min(firsts) / 1000.0 if firsts else None

    def write(self, out: TextIO, *, not_after: float | None = None) -> int:
        """Write every family as OpenMetrics text ending in `# EOF`; returns the number of samples.

        Points later than `not_after` (unix seconds) are left out, after counters have been accumulated.
        """
        limit = None if not_after is None else int(np.floor(not_after * 1000))
        samples = 0
        for family in self.families():
            out.write(f"# TYPE {family.name} {family.kind.value}\n")
            if family.unit:
                out.write(f"# UNIT {family.name} {family.unit}\n")
            out.write(f"# HELP {family.name} {_escape_help(family.help)}\n")
            for labels, slot in sorted(self._series[family.name].items()):
                times, values = _collapse(family, slot)
                if limit is not None:
                    keep = times <= limit
                    times, values = times[keep], values[keep]
                samples += _write_series(out, family, labels, times, values)
        out.write("# EOF\n")
        return samples


def _millis(times: FloatArray) -> npt.NDArray[np.int64]:
    return np.asarray(np.round(np.asarray(times, dtype=np.float64) * 1000.0), dtype=np.int64)


def _collapse(family: Family, slot: _Series) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """One value (row) per time: counters and histograms summed and accumulated, gauges the last given."""
    times = np.concatenate(slot.times) if slot.times else np.zeros(0, dtype=np.int64)
    if family.kind is Kind.HISTOGRAM:
        values = np.vstack(slot.values) if slot.values else np.zeros((0, len(family.bounds) + 2))
    else:
        values = np.concatenate(slot.values) if slot.values else np.zeros(0)
    if family.kind is Kind.GAUGE:
        # the last value given for a time wins: reverse, then take the first occurrence of each time
        rev_times = times[::-1]
        uniq, first = np.unique(rev_times, return_index=True)
        return uniq, values[::-1][first]
    uniq, inverse = np.unique(times, return_inverse=True)
    summed = np.zeros((uniq.size, *values.shape[1:]))
    np.add.at(summed, inverse, values)
    return uniq, np.cumsum(summed, axis=0)


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label_text(labels: Iterable[tuple[str, str]]) -> str:
    return ",".join(f'{k}="{_escape_value(v)}"' for k, v in labels)


def float_text(value: float) -> str:
    """A float as OpenMetrics writes it: canonical for bucket bounds (`0.005`, `1.0`), `+Inf` above all."""
    if value == np.inf:
        return "+Inf"
    return repr(float(value))


def _write_series(
    out: TextIO, family: Family, labels: Labels, times: npt.NDArray[np.int64], values: FloatArray
) -> int:
    stamps = [f"{t // 1000}.{t % 1000:03d}" for t in times.tolist()]
    if family.kind is not Kind.HISTOGRAM:
        suffix = "_total" if family.kind is Kind.COUNTER else ""
        head = f"{family.name}{suffix}{{{_label_text(labels)}}} "
        out.writelines(f"{head}{v:.12g} {s}\n" for v, s in zip(values.tolist(), stamps, strict=True))
        return len(stamps)
    # per time: the buckets cumulative over `le` (+Inf = the count), then _count and _sum. OpenMetrics
    # wants whole counts: rounding the running totals keeps them monotone in time and in `le`, and
    # carries fractions over to the next interval instead of losing them.
    cumulative = np.rint(np.cumsum(values[:, :-1], axis=1))
    heads = [
        f"{family.name}_bucket{{{_label_text(sorted([*labels, ('le', float_text(b))]))}}} "
        for b in (*family.bounds, np.inf)
    ]
    count_head = f"{family.name}_count{{{_label_text(labels)}}} "
    sum_head = f"{family.name}_sum{{{_label_text(labels)}}} "
    for row, total_sum, stamp in zip(cumulative.tolist(), values[:, -1].tolist(), stamps, strict=True):
        out.writelines(f"{h}{v:.12g} {stamp}\n" for h, v in zip(heads, row, strict=True))
        out.write(f"{count_head}{row[-1]:.12g} {stamp}\n{sum_head}{total_sum:.12g} {stamp}\n")
    return len(stamps) * (len(heads) + 2)
