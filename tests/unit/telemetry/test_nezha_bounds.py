"""Nezha cases without minute files are bounded by the index's alert time, as those with them are."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from rca.telemetry.cases import load_case, read_index
from rca.telemetry.recorded.nezha import ALERT_MINUTES, MINUTE
from tests.unit.telemetry.test_recorded import DATA_DIR, HAVE_DATA, NO_DATA

pytestmark = pytest.mark.skipif(not HAVE_DATA, reason=NO_DATA)


def _metric_only_case():
    refs = read_index(DATA_DIR, split="dev", datasets=["nezha"])
    metric_only = [r for r in refs if r.alert_hint and not any("trace" in f for f in r.files)]
    if not metric_only:
        pytest.skip("no Nezha case without minute files in the index")
    return metric_only[0]


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_a_detected_time_bounds_the_case_to_the_minutes_before_it() -> None:
    ref = _metric_only_case()
    case = load_case(DATA_DIR, ref)
    fired = case.alert.fired_at
    assert case.window.contains(fired)
    assert case.window.end - case.window.start == pytest.approx(ALERT_MINUTES * MINUTE)
    assert fired - case.window.start >= (ALERT_MINUTES - 1) * MINUTE
    # The metric range holds a baseline before the window and a little after, not the whole day.
    held = case.source.time_range()
    assert held.start < case.window.start
    assert held.end > case.window.end
    assert held.end - held.start < 2 * 3600


def test_a_later_alert_moves_the_window_with_it() -> None:
    ref = _metric_only_case()
    first = load_case(DATA_DIR, ref)
    moved = dataclasses.replace(ref, alert_hint="detected 2022-08-22 12:00:00")
    later = load_case(DATA_DIR, moved)
    assert later.window.start == pytest.approx(
        first.window.start + _at("2022-08-22 12:00:00") - first.alert.fired_at
    )


def test_without_a_hint_the_window_is_the_days_coverage() -> None:
    ref = dataclasses.replace(_metric_only_case(), alert_hint=None)
    case = load_case(DATA_DIR, ref)
    assert case.window.end - case.window.start > 6 * 3600
    assert case.window.contains(case.alert.fired_at)
