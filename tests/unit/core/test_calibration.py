"""The calibration map applied as pure data (rca.core.calibration)."""

from __future__ import annotations

import json
import math

import pytest

from rca.core.calibration import (
    FEATURES,
    CalibrationError,
    CalibrationMap,
    features,
    margin,
    supporting_lanes,
)
from rca.core.evidence import Source, Verdict
from tests.unit.core.factories import ev, hyp

STEP = CalibrationMap("validated_margin", (0.0, 1.0, 1.0, 2.0), (0.1, 0.1, 0.6, 0.9), threshold=0.7)


def test_interpolates_between_knots_and_clips_outside() -> None:
    m = CalibrationMap("margin", (0.2, 0.6), (0.3, 0.7))
    assert m.probability(0.4) == pytest.approx(0.5)
    assert m.probability(-5.0) == 0.3
    assert m.probability(0.2) == 0.3
    assert m.probability(9.0) == 0.7
    assert m.probability(0.6) == 0.7


def test_tied_knots_make_a_step_that_is_never_interpolated_across() -> None:
    assert STEP.probability(0.999) == pytest.approx(0.1)
    assert STEP.probability(1.0) == pytest.approx(0.6)  # the right side of the step
    assert STEP.probability(1.5) == pytest.approx(0.75)


def test_nan_counts_as_the_lowest_score() -> None:
    assert STEP.probability(math.nan) == 0.1


def test_apply_reads_its_feature_and_a_missing_one_is_the_lowest() -> None:
    assert STEP.apply({"validated_margin": 2.0, "margin": 0.0}) == 0.9
    assert STEP.apply({"margin": 1.0}) == 0.1


def test_confident_needs_validation_and_the_threshold() -> None:
    assert STEP.confident({"validated_margin": 2.0}, validated=True)
    assert not STEP.confident({"validated_margin": 2.0}, validated=False)
    assert not STEP.confident({"validated_margin": 1.2}, validated=True)  # 0.66 < 0.7


def test_round_trips_through_json() -> None:
    again = CalibrationMap.from_dict(json.loads(json.dumps(STEP.to_dict())))
    assert again == STEP


def test_threshold_defaults_to_one() -> None:
    m = CalibrationMap.from_dict({"feature": "lanes", "x": [0, 3], "y": [0.2, 0.8]})
    assert m.threshold == 1.0


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"x": [0], "y": [0]}, "feature"),
        ({"feature": "margin", "y": [0]}, "x"),
        ({"feature": "margin", "x": ["a"], "y": [0]}, "not numbers"),
        ({"feature": "margin", "x": 3, "y": [0]}, "not numbers"),
        ({"feature": "nope", "x": [0], "y": [0]}, "feature"),
        ({"feature": "margin", "x": [], "y": []}, "knots"),
        ({"feature": "margin", "x": [0, 1], "y": [0]}, "knots"),
        ({"feature": "margin", "x": [0, math.inf], "y": [0, 1]}, "finite"),
        ({"feature": "margin", "x": [1, 0], "y": [0, 1]}, "ascending"),
        ({"feature": "margin", "x": [0, 1], "y": [0.5, 0.4]}, "non-decreasing"),
        ({"feature": "margin", "x": [0, 1], "y": [0.5, 1.2]}, "[0, 1]"),
        ({"feature": "margin", "x": [0, 1], "y": [0.5, 0.6], "threshold": -0.1}, "[0, 1]"),
    ],
)
def test_malformed_maps_are_refused_naming_the_field(data: dict, field: str) -> None:
    with pytest.raises(CalibrationError, match=field.replace("[", r"\[").replace("]", r"\]")):
        CalibrationMap.from_dict(data)


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ((), 0.0),
        ((0.0, 0.0), 0.0),
        ((-1.0,), 0.0),
        ((math.nan, 1.0), 0.0),
        ((2.0,), 1.0),
        ((2.0, 1.0), 0.5),
        ((2.0, 3.0), 0.0),
        ((2.0, -2.0), 1.0),
    ],
)
def test_margin(scores: tuple[float, ...], expected: float) -> None:
    assert margin(scores) == pytest.approx(expected)


def test_features_of_a_validated_run() -> None:
    got = features(validated=True, raw_confidence=0.8, candidate_scores=(4.0, 1.0), supporting_lanes=2)
    assert got == {
        "validated_margin": 1.75,
        "raw_confidence": 0.8,
        "margin": 0.75,
        "top_score": 4.0,
        "lanes": 2.0,
    }
    assert set(got) == set(FEATURES)


def test_features_clamp_what_they_cannot_trust() -> None:
    got = features(validated=False, raw_confidence=math.nan, candidate_scores=(), supporting_lanes=-1)
    assert got == {
        "validated_margin": 0.0,
        "raw_confidence": 0.0,
        "margin": 0.0,
        "top_score": 0.0,
        "lanes": 0.0,
    }
    assert (
        features(validated=False, raw_confidence=3.0, candidate_scores=(-1.0,), supporting_lanes=0)[
            "raw_confidence"
        ]
        == 1.0
    )


def test_supporting_lanes_count_distinct_hard_supporting_sources() -> None:
    h = hyp(
        "h1",
        ev(Verdict.SUPPORTS, Source.METRICS),
        ev(Verdict.SUPPORTS, Source.METRICS),
        ev(Verdict.SUPPORTS, Source.LOGS),
        ev(Verdict.REFUTES, Source.TRACES),
        entity="svc",
    )
    other = hyp("h2", ev(Verdict.SUPPORTS, Source.TRACES), entity="elsewhere")
    assert supporting_lanes([h, other], "svc") == 2
    assert supporting_lanes([h, other], "none") == 0
