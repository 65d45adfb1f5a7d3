"""Fitting the confidence calibration, and the tables that show how well it holds.

A calibration map (`rca.core.calibration.CalibrationMap`) turns one engine score into the probability
that the named root cause (the top candidate) is right. It is fitted here by isotonic regression
(scikit-learn), on the evaluated rows it is given and nothing else, so the caller decides which rows
may be seen (`rca.evaluation.folds` hands it the other folds only). Which score the map reads is also
chosen from those rows: the one whose isotonic fit predicts best under an inner cross-validation.
The confident-exit threshold is the smallest calibrated probability at which the validated runs of
those rows reach `TARGET_PRECISION`.

At apply time nothing here is needed: the map is plain data (`CalibrationMap.to_dict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.isotonic import IsotonicRegression

from rca.core.calibration import FEATURES, CalibrationMap

# Issue #20's requirement on confident answers (precision >= 0.95): a product target, not fitted.
TARGET_PRECISION = 0.95
# Reliability tables use ten equal-width probability bins (the usual ECE convention).
BINS = 10
# Inner folds for choosing the feature: the smallest count that leaves every fold some rows.
INNER_FOLDS = 5


@dataclass(frozen=True, slots=True)
class Labelled:
    """One evaluated run as the calibration sees it: its scores, whether validated, whether right."""

    scores: dict[str, float]
    validated: bool
    correct: bool


def _isotonic(x: np.ndarray, y: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The knots of the isotonic fit of y on x (a constant map when x does not vary)."""
    if np.unique(x).size < 2:
        level = float(y.mean()) if y.size else 0.0
        return (float(x.min()) if x.size else 0.0,), (level,)
    model = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip").fit(x, y)
    return tuple(float(v) for v in model.X_thresholds_), tuple(float(v) for v in model.y_thresholds_)


def _brier_inner(rows: Sequence[Labelled], feature: str) -> float:
    """Mean squared error of `feature`'s isotonic fit, each row predicted by a fit without it."""
    x = np.array([r.scores.get(feature, 0.0) for r in rows], dtype=float)
    y = np.array([float(r.correct) for r in rows])
    folds = np.arange(len(rows)) % INNER_FOLDS
    errors = np.empty(len(rows))
    for k in range(INNER_FOLDS):
        held = folds == k
        if not held.any():
            continue
        knots = _isotonic(x[~held], y[~held])
        m = CalibrationMap(feature, *knots)
        errors[held] = [(m.probability(v) - t) ** 2 for v, t in zip(x[held], y[held], strict=True)]
    return float(errors.mean())


def choose_feature(rows: Sequence[Labelled], candidates: Sequence[str] = FEATURES) -> str:
    """The feature whose isotonic fit predicts correctness best on held-out rows (ties: listed first)."""
    if len(rows) < INNER_FOLDS:
        return candidates[0]
    return min(candidates, key=lambda f: (_brier_inner(rows, f), candidates.index(f)))


def threshold_for(probabilities: Sequence[float], rows: Sequence[Labelled], target: float) -> float:
    """The smallest probability at which the validated rows at or above it are right at `target`.

    1.0 when no level reaches it (only runs the map deems certain may then exit confident).
    """
    p = np.asarray(probabilities, dtype=float)
    for t in sorted(set(p.tolist())):
        chosen = [r for r, q in zip(rows, p, strict=True) if r.validated and q >= t]
        if chosen and sum(r.correct for r in chosen) / len(chosen) >= target:
            return float(t)
    return 1.0


def fit(
    rows: Sequence[Labelled], feature: str | None = None, target: float = TARGET_PRECISION
) -> CalibrationMap:
    """Fit a calibration map on `rows` (feature chosen from them when not given)."""
    if not rows:
        raise ValueError("calibration needs at least one evaluated run")
    name = feature or choose_feature(rows)
    x = np.array([r.scores.get(name, 0.0) for r in rows], dtype=float)
    y = np.array([float(r.correct) for r in rows])
    knots = _isotonic(x, y)
    draft = CalibrationMap(name, *knots)
    probs = [draft.apply(r.scores) for r in rows]
    return CalibrationMap(name, *knots, threshold=threshold_for(probs, rows, target))


@dataclass(frozen=True, slots=True)
class Bin:
    """One row of a reliability table."""

    low: float
    high: float
    count: int
    mean_probability: float | None
    accuracy: float | None


def reliability(probabilities: Sequence[float], correct: Sequence[bool], bins: int = BINS) -> list[Bin]:
    """Equal-width bins of predicted probability with their mean prediction and observed accuracy."""
    p = np.asarray(probabilities, dtype=float)
    c = np.asarray(correct, dtype=float)
    # The last bin is closed on the right so that p = 1.0 falls in it.
    index = np.minimum((p * bins).astype(int), bins - 1)
    out = []
    for b in range(bins):
        sel = index == b
        n = int(sel.sum())
        out.append(
            Bin(
                b / bins,
                (b + 1) / bins,
                n,
                float(p[sel].mean()) if n else None,
                float(c[sel].mean()) if n else None,
            )
        )
    return out


def expected_calibration_error(probabilities: Sequence[float], correct: Sequence[bool]) -> float:
    """ECE: the count-weighted mean gap between mean prediction and accuracy over the bins."""
    total = len(probabilities)
    if not total:
        return 0.0
    return sum(
        b.count / total * abs((b.accuracy or 0.0) - (b.mean_probability or 0.0))
        for b in reliability(probabilities, correct)
        if b.count
    )


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """The calibrated gate at one threshold: how often it would exit confident, and how precisely."""

    threshold: float
    confident_rate: float
    precision: float | None


def precision_rate_curve(
    probabilities: Sequence[float], rows: Sequence[Labelled], points: int = BINS
) -> list[CurvePoint]:
    """Precision against confident rate of the calibrated gate (validated and p >= t), at `points`
    thresholds spread over the observed probabilities' quantiles (highest threshold first)."""
    p = np.asarray(probabilities, dtype=float)
    if not p.size:
        return []
    levels = sorted({float(np.quantile(p, q)) for q in np.linspace(0.0, 1.0, points + 1)}, reverse=True)
    curve = []
    for t in levels:
        chosen = [r for r, q in zip(rows, p, strict=True) if r.validated and q >= t]
        curve.append(
            CurvePoint(
                round(t, 4),
                round(len(chosen) / len(rows), 4),
                round(sum(r.correct for r in chosen) / len(chosen), 4) if chosen else None,
            )
        )
    return curve
