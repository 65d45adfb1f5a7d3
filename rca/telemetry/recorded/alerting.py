"""The alert rule for recorded cases that name no symptom (Nezha, RCD).

Rule (documented in one place so every loader applies the same one):

1. For each front-end signal, the baseline is a set of normal points *before* the case window (Nezha:
   the 30 minutes preceding it) or a separate normal recording (RCD `normal.csv`).
2. Robust score of each window point: z = (x - median(baseline)) / sigma, with
   sigma = max(1.4826 * MAD(baseline), 2.5 % of |median|, 1e-9). The floor keeps a flat baseline
   (MAD = 0) from turning measurement noise into alerts.
3. A signal is anomalous at a point when z >= 4 in its bad direction (latency up, success rate down,
   resource use either way). Like a Prometheus rule with a `for:` clause, the alert fires at the point
   where the condition has held for `persist` consecutive points.
4. The alert is the earliest firing across the signals (ties: the larger |z|); its `fired_at` is the
   onset hint handed to the engine.
5. When no signal crosses the threshold, the alert fires at the window point of largest |z| with
   severity "warning" and label `rule=max_deviation`; when no score can be computed at all it fires at
   the window start with `rule=window_start`. Either way the alert lies inside the recorded window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rca.telemetry.model import Alert, Direction, FloatArray, TimeWindow

THRESHOLD = 4.0
MAD_TO_SIGMA = 1.4826
RELATIVE_FLOOR = 0.025


@dataclass(frozen=True)
class Signal:
    """One front-end series to watch, with its baseline values."""

    entity: str
    metric: str
    timestamps: FloatArray
    values: FloatArray
    baseline: FloatArray
    direction: Direction = Direction.UP


def robust_scores(
    values: FloatArray, baseline: FloatArray, direction: Direction = Direction.BOTH
) -> FloatArray:
    """Signed robust z-scores of `values` against `baseline` (positive = the bad direction).

    Returns all-NaN when the baseline has fewer than 3 finite points.
    """
    base = baseline[np.isfinite(baseline)]
    if base.size < 3:
        return np.full(values.shape, np.nan)
    med = float(np.median(base))
    mad = float(np.median(np.abs(base - med)))
    sigma = max(MAD_TO_SIGMA * mad, RELATIVE_FLOOR * abs(med), 1e-9)
    z = (values - med) / sigma
    if direction is Direction.DOWN:
        return np.asarray(-z, dtype=np.float64)
    if direction is Direction.BOTH:
        return np.asarray(np.abs(z), dtype=np.float64)
    return np.asarray(z, dtype=np.float64)


def first_anomaly(
    timestamps: FloatArray,
    values: FloatArray,
    baseline: FloatArray,
    *,
    direction: Direction = Direction.UP,
    threshold: float = THRESHOLD,
    persist: int = 1,
) -> tuple[float, float] | None:
    """(time, score) where the signal has been anomalous for `persist` consecutive points, else None."""
    z = robust_scores(values, baseline, direction)
    run = 0
    for i in np.argsort(timestamps, kind="stable"):
        if np.isfinite(z[i]) and z[i] >= threshold:
            run += 1
            if run >= persist:
                return float(timestamps[i]), float(z[i])
        else:
            run = 0
    return None


def detect_alert(
    signals: Sequence[Signal],
    window: TimeWindow,
    *,
    name: str,
    fallback_entity: str,
    threshold: float = THRESHOLD,
    persist: int = 1,
) -> Alert:
    """Apply the module's rule to `signals` restricted to `window` and return the resulting alert."""
    best: tuple[float, float, Signal] | None = None
    strongest: tuple[float, float, Signal] | None = None  # (score, time, signal) for the fallback
    for sig in signals:
        mask = (sig.timestamps >= window.start) & (sig.timestamps < window.end)
        ts, vs = sig.timestamps[mask], sig.values[mask]
        if ts.size == 0:
            continue
        hit = first_anomaly(
            ts, vs, sig.baseline, direction=sig.direction, threshold=threshold, persist=persist
        )
        if hit is not None and (best is None or hit[0] < best[0] or (hit[0] == best[0] and hit[1] > best[1])):
            best = (hit[0], hit[1], sig)
        z = robust_scores(vs, sig.baseline, sig.direction)
        if np.isfinite(z).any():
            i = int(np.nanargmax(z))
            if strongest is None or z[i] > strongest[0]:
                strongest = (float(z[i]), float(ts[i]), sig)
    if best is not None:
        t, score, sig = best
        return Alert(
            name=name,
            entity=sig.entity,
            fired_at=t,
            severity="critical",
            metric=sig.metric,
            summary=f"{sig.entity} {sig.metric} robust z={score:.1f} against its baseline",
            labels={"rule": "robust_z", "threshold": f"{threshold:g}", "persist": str(persist)},
        )
    if strongest is not None:
        score, t, sig = strongest
        return Alert(
            name=name,
            entity=sig.entity,
            fired_at=t,
            severity="warning",
            metric=sig.metric,
            summary=f"{sig.entity} {sig.metric} most deviant point, robust z={score:.1f} (below threshold)",
            labels={"rule": "max_deviation", "threshold": f"{threshold:g}"},
        )
    return Alert(
        name=name,
        entity=fallback_entity,
        fired_at=window.start,
        severity="warning",
        summary=f"{fallback_entity}: no front-end signal could be scored; window start used",
        labels={"rule": "window_start"},
    )
