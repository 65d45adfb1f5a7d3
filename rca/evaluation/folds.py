"""Out-of-fold scoring: what was chosen from data is chosen on the other folds only.

The engine run on a case does not depend on other cases, so AC@k is the same in-fold and out-of-fold.
What is chosen from evaluated data is the calibration (`rca.evaluation.calibration`: the score it
reads, the isotonic map, the confident threshold). In-fold, one calibration is fitted on every row and
scored on the same rows; out-of-fold, each fold is scored by a calibration fitted on the other folds.
The gap between the two is how much the choice was fitted to the rows it is judged on.

Folds: `dataset` (leave one dataset out), `day` (leave one recording day out: the day in the case id,
the whole dataset where it names none), `kind` (leave one fault label out; the synthetic suite's
injected kinds).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rca.core.calibration import CalibrationMap
from rca.evaluation.calibration import (
    Labelled,
    expected_calibration_error,
    fit,
    precision_rate_curve,
    reliability,
)
from rca.evaluation.scoring import CaseRow, ac_at

FOLDINGS: Mapping[str, Callable[[CaseRow], str]] = {
    "dataset": lambda r: r.key,
    "day": lambda r: r.day,
    "kind": lambda r: f"{r.dataset}:{r.label}" if r.label else r.key,
}


def labelled(row: CaseRow) -> Labelled:
    """What the calibration sees of an evaluated row."""
    return Labelled(dict(row.features), row.validated, row.correct)


@dataclass(frozen=True)
class Calibrated:
    """Every row with its in-fold and out-of-fold calibrated probability and confident exit."""

    by: str
    rows: tuple[CaseRow, ...]
    in_fold: tuple[float, ...]
    out_of_fold: tuple[float, ...]
    in_confident: tuple[bool, ...]
    out_confident: tuple[bool, ...]
    pooled_map: CalibrationMap  # fitted on every row: what the engine would be handed
    fold_maps: Mapping[str, CalibrationMap]  # per fold, fitted without it


def cross_fit(rows: Sequence[CaseRow], by: str) -> Calibrated:
    """Calibrate in-fold (all rows) and out-of-fold (each fold from the others) by `by`."""
    if by not in FOLDINGS:
        raise ValueError(f"folds must be one of {', '.join(FOLDINGS)}, not {by!r}")
    if not rows:
        raise ValueError("no evaluated rows to calibrate")
    fold_of = FOLDINGS[by]
    seen = [labelled(r) for r in rows]
    pooled = fit(seen)
    folds = sorted({fold_of(r) for r in rows})
    maps: dict[str, CalibrationMap] = {}
    for fold in folds:
        others = [s for r, s in zip(rows, seen, strict=True) if fold_of(r) != fold]
        # A single fold has no others: it can only be scored by itself (reported as such).
        maps[fold] = fit(others) if others else pooled
    oof_maps = [maps[fold_of(r)] for r in rows]
    return Calibrated(
        by=by,
        rows=tuple(rows),
        in_fold=tuple(pooled.apply(s.scores) for s in seen),
        out_of_fold=tuple(m.apply(s.scores) for m, s in zip(oof_maps, seen, strict=True)),
        in_confident=tuple(pooled.confident(s.scores, s.validated) for s in seen),
        out_confident=tuple(m.confident(s.scores, s.validated) for m, s in zip(oof_maps, seen, strict=True)),
        pooled_map=pooled,
        fold_maps=maps,
    )


def _gate(rows: Sequence[CaseRow], confident: Sequence[bool]) -> dict[str, float | None]:
    chosen = [r for r, c in zip(rows, confident, strict=True) if c]
    return {
        "confident_rate": round(len(chosen) / len(rows), 4) if rows else 0.0,
        "confident_precision": round(sum(r.correct for r in chosen) / len(chosen), 4) if chosen else None,
    }


def _group(cal: Calibrated, index: Sequence[int]) -> dict[str, Any]:
    rows = [cal.rows[i] for i in index]
    correct = [r.correct for r in rows]
    p_in = [cal.in_fold[i] for i in index]
    p_out = [cal.out_of_fold[i] for i in index]
    return {
        "cases": len(rows),
        "ac1": round(ac_at(rows, 1), 4),
        "ac3": round(ac_at(rows, 3), 4),
        "engine_gate": _gate(rows, [r.exit == "confident" for r in rows]),
        "calibrated_gate": {
            "in_fold": _gate(rows, [cal.in_confident[i] for i in index]),
            "out_of_fold": _gate(rows, [cal.out_confident[i] for i in index]),
        },
        "ece": {
            "in_fold": round(expected_calibration_error(p_in, correct), 4),
            "out_of_fold": round(expected_calibration_error(p_out, correct), 4),
        },
    }


def report(cal: Calibrated) -> dict[str, Any]:
    """Per dataset key and pooled: AC@k, the engine's gate, the calibrated gate and ECE in and out of
    fold; the pooled out-of-fold reliability table and precision-vs-rate curve; the fitted maps."""
    keys = sorted({r.key for r in cal.rows})
    groups = {k: _group(cal, [i for i, r in enumerate(cal.rows) if r.key == k]) for k in keys}
    everything = list(range(len(cal.rows)))
    seen = [labelled(r) for r in cal.rows]
    correct = [r.correct for r in cal.rows]
    return {
        "folds": cal.by,
        "datasets": groups,
        "pooled": _group(cal, everything),
        "reliability_out_of_fold": [
            {
                "bin": f"[{b.low:.1f}, {b.high:.1f})",
                "cases": b.count,
                "mean_probability": None if b.mean_probability is None else round(b.mean_probability, 4),
                "accuracy": None if b.accuracy is None else round(b.accuracy, 4),
            }
            for b in reliability(cal.out_of_fold, correct)
        ],
        "precision_vs_rate_out_of_fold": [
            {"threshold": p.threshold, "confident_rate": p.confident_rate, "precision": p.precision}
            for p in precision_rate_curve(cal.out_of_fold, seen)
        ],
        "pooled_map": cal.pooled_map.to_dict(),
        "fold_maps": {k: m.to_dict() for k, m in sorted(cal.fold_maps.items())},
    }


def table(rep: Mapping[str, Any]) -> str:
    """The report's per-dataset rows as a fixed-width text table (in-fold | out-of-fold)."""
    head = (
        f"{'dataset':32s} {'n':>4s} {'AC@1':>5s} {'AC@3':>5s} {'engine rate/prec':>17s} "
        f"{'calib. in rate/prec':>20s} {'calib. OOF rate/prec':>21s} {'ECE in/OOF':>11s}"
    )
    lines = [f"folds: {rep['folds']}", head]

    def pair(g: Mapping[str, Any]) -> str:
        prec = g["confident_precision"]
        return f"{g['confident_rate']:.2f}/{'-' if prec is None else f'{prec:.2f}'}"

    for name, g in [*rep["datasets"].items(), ("pooled", rep["pooled"])]:
        cg = g["calibrated_gate"]
        lines.append(
            f"{name:32s} {g['cases']:4d} {g['ac1']:5.2f} {g['ac3']:5.2f} {pair(g['engine_gate']):>17s} "
            f"{pair(cg['in_fold']):>20s} {pair(cg['out_of_fold']):>21s} "
            f"{g['ece']['in_fold']:.3f}/{g['ece']['out_of_fold']:.3f}"
        )
    return "\n".join(lines)
