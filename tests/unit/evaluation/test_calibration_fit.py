"""Fitting the calibration (isotonic), its threshold, the tables, and out-of-fold scoring."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from rca.core.calibration import CalibrationMap
from rca.evaluation.calibration import (
    Labelled,
    choose_feature,
    expected_calibration_error,
    fit,
    precision_rate_curve,
    reliability,
    threshold_for,
)
from rca.evaluation.folds import cross_fit, labelled, report, table
from rca.evaluation.scoring import CaseRow


def _row(key: str, case: str, *, correct: bool, validated: bool, score: float, label: str = "x") -> CaseRow:
    dataset, _, system = key.partition("/")
    return CaseRow(
        dataset=dataset,
        system=system,
        case_id=case,
        truth="a",
        truth_kind=None,
        top5=("a", "b") if correct else ("b", "a"),
        predicted_kind=None,
        exit="confident" if validated else "no_confident_root_cause",
        validated=validated,
        tier="patch",
        capped_confidence=0.5,
        seconds=0.1,
        label=label,
        features={"margin": score, "lanes": 1.0 if validated else 0.0, "top_score": 1.0},
    )


def _population(seed: int = 3, n: int = 120) -> list[CaseRow]:
    """Rows whose chance of being right rises with their margin (p = margin), across three datasets."""
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        m = rnd.random()
        rows.append(
            _row(
                f"d{i % 3}/S",
                f"d{i % 3}/2024-01-0{1 + i % 2}/{i}",
                correct=rnd.random() < m,
                validated=m > 0.3,
                score=m,
                label="k1" if i % 4 else "k2",
            )
        )
    return rows


def test_isotonic_fit_is_monotone_and_tracks_the_true_rate() -> None:
    rows = [Labelled(dict(r.features), r.exit == "confident", r.correct) for r in _population(n=600)]
    m = fit(rows, feature="margin")
    assert list(m.y) == sorted(m.y)
    assert m.probability(0.1) < 0.35
    assert m.probability(0.9) > 0.7
    assert expected_calibration_error([m.apply(r.scores) for r in rows], [r.correct for r in rows]) < 0.05


def test_the_informative_feature_is_chosen() -> None:
    rows = [Labelled(dict(r.features), r.exit == "confident", r.correct) for r in _population(n=300)]
    assert choose_feature(rows) == "margin"  # top_score is constant, lanes only says validated
    assert choose_feature(rows[:3]) == "validated_margin"  # too few rows to choose: the first listed


def test_a_constant_feature_gives_a_constant_map() -> None:
    rows = [Labelled({"margin": 0.5}, True, c) for c in (True, True, False, True)]
    m = fit(rows, feature="margin")
    assert m.probability(0.0) == m.probability(1.0) == pytest.approx(0.75)


def test_threshold_is_the_lowest_level_reaching_the_target() -> None:
    rows = [
        Labelled({}, True, True),
        Labelled({}, True, True),
        Labelled({}, True, False),
        Labelled({}, False, True),
    ]
    assert threshold_for([0.9, 0.8, 0.5, 0.2], rows, 0.95) == 0.8
    assert threshold_for([0.9, 0.8, 0.5, 0.2], rows, 0.6) == 0.2
    assert threshold_for([0.9, 0.9, 0.9, 0.9], [Labelled({}, True, False)] * 4, 0.95) == 1.0


def test_fit_refuses_no_rows() -> None:
    with pytest.raises(ValueError, match="at least one"):
        fit([])


def test_reliability_bins_and_ece() -> None:
    bins = reliability([0.05, 0.15, 1.0, 0.95], [False, True, True, True])
    assert [b.count for b in bins] == [1, 1, 0, 0, 0, 0, 0, 0, 0, 2]
    assert bins[9].accuracy == 1.0
    assert bins[2].mean_probability is None
    ece = expected_calibration_error([0.05, 0.15, 1.0, 0.95], [False, True, True, True])
    assert ece == pytest.approx((0.05 + 0.85 + 0.025 * 2) / 4)
    assert expected_calibration_error([], []) == 0.0


def test_precision_rate_curve_goes_from_strict_to_lenient() -> None:
    rows = [Labelled({}, True, True), Labelled({}, True, False), Labelled({}, False, True)]
    curve = precision_rate_curve([0.9, 0.4, 0.1], rows)
    assert curve[0].threshold == 0.9
    assert curve[0].confident_rate == pytest.approx(1 / 3, abs=1e-4)
    assert curve[0].precision == 1.0
    assert curve[-1].confident_rate == pytest.approx(2 / 3, abs=1e-4)
    assert curve[-1].precision == 0.5
    assert precision_rate_curve([], []) == []


def test_out_of_fold_scores_each_fold_with_a_map_fitted_without_it() -> None:
    rows = _population()
    cal = cross_fit(rows, "dataset")
    assert set(cal.fold_maps) == {"d0/S", "d1/S", "d2/S"}
    # A fold's own rows did not shape its map: refitting on the others gives the same map.
    others = [r for r in rows if r.key != "d0/S"]
    assert cal.fold_maps["d0/S"] == fit([labelled(r) for r in others])
    assert cal.pooled_map == fit([labelled(r) for r in rows])
    rep = report(cal)
    assert rep["pooled"]["cases"] == len(rows)
    assert set(rep["datasets"]) == {"d0/S", "d1/S", "d2/S"}
    assert len(rep["reliability_out_of_fold"]) == 10
    json.dumps(rep)  # JSON-ready
    CalibrationMap.from_dict(rep["pooled_map"])
    text = table(rep)
    assert "pooled" in text
    assert "d1/S" in text


def test_day_and_kind_folds() -> None:
    rows = _population()
    assert set(cross_fit(rows, "day").fold_maps) == {f"d{i}/2024-01-0{j}" for i in range(3) for j in (1, 2)}
    assert set(cross_fit(rows, "kind").fold_maps) == {f"d{i}:{k}" for i in range(3) for k in ("k1", "k2")}


def test_a_single_fold_is_scored_by_its_own_map() -> None:
    rows = [r for r in _population() if r.key == "d0/S"]
    cal = cross_fit(rows, "dataset")
    assert cal.in_fold == cal.out_of_fold


def test_unknown_folding_and_no_rows_are_refused() -> None:
    with pytest.raises(ValueError, match="folds must be one of"):
        cross_fit(_population(), "week")
    with pytest.raises(ValueError, match="no evaluated rows"):
        cross_fit([], "dataset")


def test_calibration_reads_the_gate_validated_flag_not_the_calibrated_exit() -> None:
    # A validated run the calibrated gate withheld still counts as validated for the fit.
    row = replace(_row("d/s", "c1", correct=True, validated=True, score=0.5), exit="no_confident_root_cause")
    assert labelled(row).validated
