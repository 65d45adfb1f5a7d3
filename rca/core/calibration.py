"""Calibrated confidence: the engine's scores mapped to a probability that the named root cause is right.

The map is fitted elsewhere (`rca.evaluation.calibration`, isotonic regression, out-of-fold) and
stored as plain data: the feature it reads and a non-decreasing piecewise-linear curve through
`(x, y)` knots. Applying it needs nothing but this module, so the engine can carry the map as JSON
and evaluate it at its gate without any fitting library.

`features` computes, from primitives every investigation result holds, the scores a map may read;
the fitting side and the engine both call it, so what is fitted is exactly what is applied.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rca.core.evidence import Verdict
from rca.core.hypotheses import Hypothesis

# The features a calibration map may read (see `features`).
FEATURES = ("validated_margin", "raw_confidence", "margin", "top_score", "lanes")


class CalibrationError(ValueError):
    """A stored calibration map is malformed; the message names the field."""


@dataclass(frozen=True, slots=True)
class CalibrationMap:
    """A non-decreasing piecewise-linear map from one feature to a probability in [0, 1].

    Below the first knot the first `y` holds, above the last knot the last `y` (the fitted range is
    never extrapolated). `threshold` is the calibrated probability a confident exit must reach.
    """

    feature: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    threshold: float = 1.0

    def __post_init__(self) -> None:
        if self.feature not in FEATURES:
            raise CalibrationError(f"feature: {self.feature!r} is not one of {', '.join(FEATURES)}")
        if not self.x or len(self.x) != len(self.y):
            raise CalibrationError("x, y: need the same, non-zero number of knots")
        if any(not math.isfinite(v) for v in (*self.x, *self.y, self.threshold)):
            raise CalibrationError("x, y, threshold: every value must be a finite number")
        if any(b < a for a, b in zip(self.x, self.x[1:], strict=False)):
            raise CalibrationError("x: knots must be sorted ascending")
        if any(b < a for a, b in zip(self.y, self.y[1:], strict=False)):
            raise CalibrationError("y: the map must be non-decreasing")
        if not all(0.0 <= v <= 1.0 for v in (*self.y, self.threshold)):
            raise CalibrationError("y, threshold: probabilities must lie in [0, 1]")

    def probability(self, value: float) -> float:
        """The calibrated probability at `value` (NaN counts as the lowest score)."""
        if math.isnan(value) or value <= self.x[0]:
            return self.y[0]
        if value >= self.x[-1]:
            return self.y[-1]
        i = bisect.bisect_right(self.x, value)
        x0, x1, y0, y1 = self.x[i - 1], self.x[i], self.y[i - 1], self.y[i]
        # x0 < value < x1 here, so x1 > x0: tied knots (a step) are never interpolated across.
        return y0 + (y1 - y0) * (value - x0) / (x1 - x0)

    def apply(self, scores: Mapping[str, float]) -> float:
        """The calibrated probability of a run whose `features` are `scores`."""
        return self.probability(scores.get(self.feature, math.nan))

    def confident(self, scores: Mapping[str, float], validated: bool) -> bool:
        """Whether a run may exit confident: validated evidence and a probability at the threshold."""
        return validated and self.apply(scores) >= self.threshold

    def to_dict(self) -> dict[str, Any]:
        """The stored (JSON) form."""
        return {"feature": self.feature, "x": list(self.x), "y": list(self.y), "threshold": self.threshold}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CalibrationMap:
        """Read the stored form; CalibrationError naming the field when it is malformed."""
        try:
            feature, x, y = str(data["feature"]), data["x"], data["y"]
            threshold = data.get("threshold", 1.0)
            knots = (tuple(float(v) for v in x), tuple(float(v) for v in y), float(threshold))
        except KeyError as exc:
            raise CalibrationError(f"{exc.args[0]}: missing") from None
        except (TypeError, ValueError) as exc:
            raise CalibrationError(f"x, y, threshold: not numbers ({exc})") from None
        return cls(feature, knots[0], knots[1], knots[2])


def margin(scores: Sequence[float]) -> float:
    """How far the first candidate score leads the second, as a share of the first, in [0, 1].

    One candidate leads by everything; none, or a first score that is not positive, by nothing.
    """
    if not scores or not scores[0] > 0:
        return 0.0
    if len(scores) < 2:
        return 1.0
    return max(0.0, min(1.0, (scores[0] - scores[1]) / scores[0]))


def supporting_lanes(hypotheses: Iterable[Hypothesis], entity: str) -> int:
    """Distinct evidence lanes whose hard evidence supports a hypothesis about `entity`."""
    return len(
        {
            e.source
            for h in hypotheses
            if h.entity == entity
            for e in h.evidence
            if e.is_hard and e.verdict is Verdict.SUPPORTS
        }
    )


def features(
    *, validated: bool, raw_confidence: float, candidate_scores: Sequence[float], supporting_lanes: int
) -> dict[str, float]:
    """The scores a calibration map may read, from what every investigation result holds.

    `validated`: the gate found a validated hypothesis (the confident exit); `raw_confidence`: the
    policy's confidence before the grounding cap; `candidate_scores`: the ranked candidates' seed
    scores, best first; `supporting_lanes`: distinct telemetry sources supporting the named cause.
    `validated_margin` orders every validated run above every unvalidated one, then by margin.
    """
    lead = margin(candidate_scores)
    raw = raw_confidence if math.isfinite(raw_confidence) else 0.0
    return {
        "validated_margin": (1.0 if validated else 0.0) + lead,
        "raw_confidence": max(0.0, min(1.0, raw)),
        "margin": lead,
        "top_score": max(0.0, candidate_scores[0]) if candidate_scores else 0.0,
        "lanes": float(max(0, supporting_lanes)),
    }
