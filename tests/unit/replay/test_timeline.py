"""The replay's timeline: the onset before now, the scrape grid and the rule windows."""

from __future__ import annotations

import numpy as np
import pytest

from rca.telemetry.model import TimeWindow
from rca.telemetry.replay.timeline import NORMAL_GAP, SLACK, Timeline, duration_text, rate_window

NOW = 1_800_000_000.4


def test_the_alert_lands_a_rate_window_and_the_slack_before_now() -> None:
    t = Timeline.place(NOW, alert_time=1_000_000.0, step=60.0)
    assert t.now == 1_800_000_000.0  # on the rules' 1 min subquery grid
    assert t.window == 240.0  # four scrape intervals
    assert t.lead == 240.0
    assert t.onset == t.now - t.lead
    assert 1_000_000.0 + t.shift == t.onset
    assert t.baseline_offset == t.lead + SLACK + 60.0
    assert t.resolution == 60.0
    assert t.lookback_delta == 300.0


def test_fast_scrapes_take_the_evaluation_interval_into_the_window() -> None:
    t = Timeline.place(NOW, alert_time=0.0, step=1.0)
    assert rate_window(1.0) == t.window == 16.0  # Grafana's $__rate_interval: 15 s + one scrape
    assert t.resolution == 15.0


def test_slow_scrapes_stretch_the_lookback() -> None:
    t = Timeline.place(NOW, alert_time=0.0, step=300.0)
    assert t.window == 1200.0
    assert t.lookback_delta == 600.0


def test_samples_go_to_the_nearest_scrape_so_jitter_around_the_grid_leaves_no_hole() -> None:
    t = Timeline.place(1_700_000_000.0, 1_699_990_000.0, 60.0)
    jittered = t.now + np.array([-180.4, -119.8, -60.3, 0.2])  # a second either side of each scrape
    assert (t.nearest(jittered) - t.now).tolist() == [-180.0, -120.0, -60.0, 0.0]
    assert len(set(t.snap(jittered).tolist())) == 3  # moved up, two would share a scrape time


def test_times_snap_up_to_the_scrape_grid_ending_at_now() -> None:
    t = Timeline.place(NOW, alert_time=0.0, step=60.0)
    snapped = t.snap(np.array([t.now - 61.0, t.now - 60.0, t.now - 0.5, t.now + 1.0]))
    assert (snapped - t.now).tolist() == [-60.0, -60.0, 0.0, 60.0]
    assert (t.snap(np.array([t.now - 16.0]), 15.0) - t.now).tolist() == [-15.0]


def test_a_separate_normal_recording_ends_a_live_incident_window_before_the_case() -> None:
    t = Timeline.place(NOW, alert_time=5_000.0, step=1.0)
    case = TimeWindow(4_990.0, 5_200.0)
    normal = TimeWindow(100.0, 400.0)
    shift = t.place_before(normal, case)
    assert normal.end + shift == case.start + t.shift - NORMAL_GAP
    assert t.place_before(TimeWindow(4_000.0, 5_000.0), case) == t.shift  # overlapping: same clock


def test_retention_keeps_the_earliest_sample() -> None:
    t = Timeline.place(NOW, alert_time=0.0, step=60.0)
    assert t.retention_days(t.now - 3600) == 15
    assert t.retention_days(t.now - 20 * 86400) == 21


def test_a_step_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Timeline.place(NOW, alert_time=0.0, step=0.0)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (16, "16s"), (124, "2m4s"), (360, "6m"), (3600, "1h"), (3725, "1h2m5s")]
)
def test_durations_read_as_prometheus_writes_them(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def test_now_sits_on_the_rules_subquery_grid() -> None:
    assert Timeline.place(1_800_000_059.9, alert_time=0.0, step=60.0).now == 1_800_000_000.0
    assert Timeline.place(1_800_000_029.0, alert_time=0.0, step=1.0).now == 1_800_000_015.0
