"""The OpenMetrics exposition: monotone counters, last-value gauges, whole cumulative histogram counts,
checked against prometheus_client's (strict) OpenMetrics parser."""

from __future__ import annotations

import io

import numpy as np
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from rca.telemetry.replay.openmetrics import Exposition, Family, Kind, float_text
from tests.unit.replay.omtext import values, written

COUNTER = Family("demo_work_seconds", Kind.COUNTER, "Work done.", "seconds")
GAUGE = Family("demo_level_bytes", Kind.GAUGE, "A level.", "bytes")
HISTOGRAM = Family("demo_duration_seconds", Kind.HISTOGRAM, "Durations.", "seconds", (0.1, 1.0))


def text(expo: Exposition) -> str:
    buf = io.StringIO()
    expo.write(buf)
    return buf.getvalue()


def test_counter_increments_accumulate_in_time_order_and_sources_add_up() -> None:
    expo = Exposition()
    expo.add(COUNTER, {"pod": "a"}, np.array([20.0, 10.0, 30.0]), np.array([2.0, 1.0, 3.0]))
    expo.add(COUNTER, {"pod": "a"}, np.array([20.0]), np.array([10.0]))  # a second source, same series
    body = text(expo)
    assert [(s.value, s.time) for s in written(expo) if s.name == "demo_work_seconds_total"] == [
        (1.0, 10.0),
        (13.0, 20.0),
        (16.0, 30.0),
    ]
    (family,) = text_string_to_metric_families(body)
    assert (family.name, family.type, family.unit) == ("demo_work_seconds", "counter", "seconds")


def test_negative_and_missing_increments_never_make_a_counter_go_down() -> None:
    expo = Exposition()
    expo.add(COUNTER, {}, np.array([1.0, 2.0, 3.0, 4.0]), np.array([5.0, -3.0, np.nan, 1.0]))
    assert values(written(expo), "demo_work_seconds_total") == [5.0, 5.0, 6.0]


def test_gauge_keeps_the_last_value_given_for_a_time_and_skips_gaps() -> None:
    expo = Exposition()
    expo.add(GAUGE, {"pod": "a"}, np.array([1.0, 2.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0, np.nan]))
    assert [(s.value, s.time) for s in written(expo)] == [(4.0, 1.0), (6.0, 2.0)]


def test_histogram_points_are_cumulative_whole_counts_ending_at_inf() -> None:
    expo = Exposition()
    # per interval: 0.4 and 0.6 requests below 0.1 s, 1 between 0.1 and 1 s, 0.5 above 1 s
    increments = np.array([[0.4, 1.0, 0.5], [0.6, 1.0, 0.5]])
    expo.add_histogram(
        HISTOGRAM, {"service_name": "s"}, np.array([10.0, 20.0]), increments, np.array([1.0, 2.0])
    )
    body = text(expo)
    parsed = written(expo)
    at: dict[float, dict[str, float]] = {10.0: {}, 20.0: {}}
    for s in parsed:
        if s.name == "demo_duration_seconds_bucket":
            at[s.time][s.labels["le"]] = s.value
    assert at[10.0] == {"0.1": 0.0, "1.0": 1.0, "+Inf": 2.0}  # 0.4 -> 0, 1.4 -> 1, 1.9 -> 2
    assert at[20.0] == {"0.1": 1.0, "1.0": 3.0, "+Inf": 4.0}  # fractions carried over: 1.0, 3.4, 4.0
    assert values(parsed, "demo_duration_seconds_count") == [2.0, 4.0]
    assert values(parsed, "demo_duration_seconds_sum") == [1.0, 3.0]
    # every MetricPoint, taken alone, satisfies the strict parser (whole counts, +Inf, count = +Inf)
    header, points = body.split("\n", 3)[:3], body.splitlines()[3:-1]
    for stamp in ("10.000", "20.000"):
        one = "\n".join([*header, *[p for p in points if p.endswith(" " + stamp)], "# EOF"]) + "\n"
        (family,) = text_string_to_metric_families(one)
        assert family.type == "histogram"


def test_write_cuts_points_after_not_after_once_counters_are_accumulated() -> None:
    expo = Exposition()
    expo.add(COUNTER, {"pod": "a"}, np.array([10.0, 20.0, 30.0]), np.array([1.0, 1.0, 1.0]))
    assert [(s.value, s.time) for s in written(expo, not_after=20.0)] == [(1.0, 10.0), (2.0, 20.0)]


def test_output_ends_in_eof_and_label_values_are_escaped() -> None:
    expo = Exposition()
    expo.add(GAUGE, {"pod": 'we"ird\\name', "empty": ""}, np.array([1.0]), np.array([1.0]))
    body = text(expo)
    assert body.endswith("# EOF\n")
    assert 'pod="we\\"ird\\\\name"' in body
    assert "empty" not in body  # an empty label is an absent label
    (family,) = text_string_to_metric_families(body)
    assert family.samples[0].labels == {"pod": 'we"ird\\name'}


def test_families_are_checked_when_declared() -> None:
    with pytest.raises(ValueError, match="must end with _seconds"):
        Family("demo_duration", Kind.GAUGE, "x", "seconds")
    with pytest.raises(ValueError, match="ascending"):
        Family("demo_seconds", Kind.HISTOGRAM, "x", "seconds", (1.0, 0.5))
    expo = Exposition()
    expo.add(GAUGE, {}, np.array([1.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="declared twice"):
        expo.add(Family("demo_level_bytes", Kind.COUNTER, "x", "bytes"), {}, np.array([1.0]), np.array([1.0]))
    with pytest.raises(TypeError):
        expo.add(HISTOGRAM, {}, np.array([1.0]), np.array([1.0]))
    with pytest.raises(TypeError):
        expo.add_histogram(GAUGE, {}, np.array([1.0]), np.zeros((1, 3)), np.zeros(1))
    with pytest.raises(ValueError, match="3 bucket columns"):
        expo.add_histogram(HISTOGRAM, {}, np.array([1.0]), np.zeros((1, 2)), np.zeros(1))


def test_series_counts_and_lookups() -> None:
    expo = Exposition()
    assert expo.earliest() is None
    expo.add(GAUGE, {"pod": "a"}, np.array([5.0]), np.array([1.0]))
    expo.add_histogram(HISTOGRAM, {"service_name": "s"}, np.array([3.0]), np.zeros((1, 3)), np.zeros(1))
    assert expo.series_count() == {"demo_duration_seconds": 5, "demo_level_bytes": 1}
    assert expo.has_series(GAUGE, pod="a")
    assert not expo.has_series(GAUGE, pod="b")
    assert not expo.has_series(COUNTER)
    assert expo.earliest() == 3.0


def test_float_text_is_canonical() -> None:
    assert [float_text(v) for v in (0.005, 1.0, 10.0, np.inf)] == ["0.005", "1.0", "10.0", "+Inf"]
