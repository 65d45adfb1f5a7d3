"""Where a recorded case lands in time when it is replayed as a live cluster, and the rule timing.

The replayed present `now` is the moment the replay is written, floored to the rules' subquery step
(`resolution`, below), so that what the rules read does not depend on the second of the replay. The case
is shifted so that its alert time (the onset hint the case's loader gives, never an injection label) lies
`lead` before `now`; points later than `now` are dropped, so the backfilled blocks are older than
anything Prometheus's head will hold (the rule manager writes `ALERTS` at wall-clock time into the head;
a block overlapping the head's range would have to be merged by vertical compaction). A separate normal
recording (RCD `normal.csv`, PetShop `noissue/`) is placed to end `NORMAL_GAP` before the case recording
begins, as the history a live cluster keeps, where a live investigation reads its baseline.

Prometheus starts on the backfilled data a little after `now`; nothing arrives after `now`, so the rules
read the worst value within the lookback delta (see `rules`), which still holds the last full rate window
while the alert is pending, and a live investigation ends its windows at the newest `up` sample, `now`
(`LiveSource.present`). The windows:

- scrape step `step`: the case's median metric interval in whole seconds (1 s RCD, 60 s Nezha and
  ChangeRCA, 300 s PetShop); every series is written on the grid `now - k * step`, as a scrape gives.
- rate window `window` = Grafana's `$__rate_interval` for a rule evaluated every 15 s: the larger of
  the evaluation interval plus one scrape interval and four scrape intervals (16 s for 1 s data, 4 m
  for 1 m data).
- `SLACK` (2 min): `for: 1m` + one 15 s evaluation + up to 45 s from writing the replay to Prometheus's
  first rule evaluation (backfill and start-up).
- onset lead `lead` = `window`, at least `SLACK`: the latest rate window lies after the onset (a longer
  lead would let a fault of a few minutes end before `now`, and the rule see only its aftermath), and the
  replay holds a few minutes of the incident when the alert fires.
- baseline: the hour ending `lead` + `SLACK` + `resolution` ago (it ends at the onset at the last
  pending evaluation, `now` being up to one `resolution` old), evaluated every `resolution` =
  `max(step, 15 s)`.
- `--query.lookback-delta`: Prometheus's default 5 m, or two scrape intervals when those are longer (a
  gauge sampled every 5 m would otherwise vanish between its samples); the rules' worst-value window is
  the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rca.telemetry.model import FloatArray, TimeWindow

SLACK = 120.0
RULE_FOR = 60.0  # the issue's `for: 1m`
EVALUATION_INTERVAL = 15.0  # Prometheus's example configuration (documentation/examples/prometheus.yml)
SAMPLES_PER_WINDOW = 4
# An hour: longer than any recorded alert baseline (Nezha's 30 minutes), so the live baseline holds every
# point the recorded rule would compare with.
BASELINE_SPAN = 3600.0
# A live investigation's baseline is the hour before its incident window, which starts 10 minutes before
# the alert (EngineConfig.before_onset_s; LiveConfig.baseline_gap_seconds may move it earlier still): a
# normal recording ending right at the case (RCD's five minutes) would fall inside the incident window and
# leave the live baseline empty. Well inside the rules' baseline hour (it ends about 2 minutes before the
# onset), so the alert still compares against it.
NORMAL_GAP = 900.0
DEFAULT_LOOKBACK = 300.0  # Prometheus's --query.lookback-delta default (staleness)
DEFAULT_RETENTION_DAYS = 15  # Prometheus's --storage.tsdb.retention.time default


@dataclass(frozen=True)
class Timeline:
    """The replayed present, the shift applied to the case recording and the windows derived from them."""

    now: float
    onset: float  # the shifted alert time
    shift: float  # added to every time of the case recording
    step: float

    @classmethod
    def place(cls, now: float, alert_time: float, step: float) -> Timeline:
        """Shift a case whose alert fired at `alert_time` so that it lies `lead` before `now`."""
        if not (math.isfinite(step) and step > 0):
            raise ValueError(f"scrape step must be a positive number of seconds, not {step}")
        # on the rules' subquery grid, so that what they read does not depend on the second of the replay
        grid = max(step, EVALUATION_INTERVAL)
        now = float(math.floor(now / grid) * grid)
        lead = max(rate_window(step), SLACK)
        return cls(now=now, onset=now - lead, shift=now - lead - alert_time, step=step)

    @property
    def window(self) -> float:
        """Range of `rate()` in the rules (seconds)."""
        return rate_window(self.step)

    @property
    def lead(self) -> float:
        """How long before `now` the onset lies."""
        return self.now - self.onset

    @property
    def baseline_offset(self) -> float:
        """How long ago the rules' baseline hour ends (`now` may lie a subquery step in the past)."""
        return self.lead + SLACK + self.resolution

    @property
    def resolution(self) -> float:
        """Step of the rules' subqueries (`now` is a multiple of it)."""
        return max(self.step, EVALUATION_INTERVAL)

    @property
    def lookback_delta(self) -> float:
        """`--query.lookback-delta` for this replay, and the rules' worst-value window."""
        return max(DEFAULT_LOOKBACK, 2 * self.step)

    def snap(self, times: FloatArray, step: float | None = None) -> FloatArray:
        """Times moved up to the scrape grid `now - k * step`."""
        grid = step or self.step
        t = np.asarray(times, dtype=np.float64)
        return np.asarray(self.now + np.ceil((t - self.now) / grid - 1e-9) * grid, dtype=np.float64)

    def nearest(self, times: FloatArray) -> FloatArray:
        """Sample times moved to the nearest point of the scrape grid `now - k * step`. A recorded sample
        taken a second either side of a scrape time belongs to that scrape: ChangeRCA's samples jitter
        around the minute, and moved up (`snap`) one taken just before a grid point and the next, taken
        just after it, would share one scrape time, leave the one before empty, and halve a counter's
        rate across it."""
        t = np.asarray(times, dtype=np.float64)
        return np.asarray(self.now + np.round((t - self.now) / self.step) * self.step, dtype=np.float64)

    def place_before(self, recording: TimeWindow, case: TimeWindow) -> float:
        """The shift for a separate normal recording: it ends `NORMAL_GAP` before the case begins."""
        if recording.overlaps(case):
            return self.shift
        return case.start + self.shift - recording.end - NORMAL_GAP

    def retention_days(self, earliest: float) -> int:
        """`--storage.tsdb.retention.time` (days) that keeps a sample from `earliest` (shifted time)."""
        needed = math.ceil((self.now - earliest) / 86400.0) + 1
        return max(DEFAULT_RETENTION_DAYS, needed)


def rate_window(step: float) -> float:
    """Grafana's `$__rate_interval` for a scrape interval `step` and the rules' evaluation interval."""
    return max(EVALUATION_INTERVAL + step, SAMPLES_PER_WINDOW * step)


def duration_text(seconds: float) -> str:
    """A Prometheus duration (`2m4s`, `6m`, `1h`) for a whole number of seconds."""
    left = round(seconds)
    if left <= 0:
        return "0s"
    parts = []
    for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    return "".join(parts)
