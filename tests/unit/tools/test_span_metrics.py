"""Span durations read from span metrics (`rca.tools.span_metrics`): the cases where they say nothing.
Their reading of a real Prometheus is tested in tests/live/test_live_prometheus.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from rca.telemetry.model import OperationDurations, TelemetryError, TimeWindow
from rca.tools.span_metrics import COVERAGE_STEP, SpanMetrics, duration_z
from tests.unit.tools import BASELINE, INCIDENT, ONSET, FakeSource, context

SERVICES = ("front", "back", "db")
FAULT = [ONSET + COVERAGE_STEP * k for k in range(1, 5)]


@dataclass
class SpanMetricsSource(FakeSource):
    """Span metrics covering the minutes of `minutes` (minute ends), every operation's median as given."""

    minutes: list[float] = field(default_factory=list)
    medians: dict[str, tuple[float, float]] = field(default_factory=dict)  # reference, observed
    spans: float = 120.0
    down: bool = False
    asked: list[TimeWindow] = field(default_factory=list)

    def span_coverage(self, window: TimeWindow, step: float) -> list[tuple[float, str]]:
        self.asked.append(window)
        if self.down:
            raise TelemetryError("prometheus", "connection refused")
        return [(t, s) for t in self.minutes if window.contains(t) for s in SERVICES]

    def operation_durations(self, window: TimeWindow) -> list[OperationDurations]:
        side = 1 if window.end > ONSET else 0
        return [OperationDurations(s, "GET /", self.spans, m[side]) for s, m in self.medians.items()]


def _source(**options: object) -> SpanMetricsSource:
    normal = [ONSET - 3000.0 + COVERAGE_STEP * k for k in range(1, 13)]  # before the baseline
    medians = {"front": (0.02, 0.021), "back": (0.02, 0.2), "db": (0.01, 0.0101)}
    found = {"edges": (("front", "back"), ("back", "db")), "minutes": normal + FAULT, "medians": medians}
    return SpanMetricsSource(**{**found, **options})  # type: ignore[arg-type]


def test_the_reference_reaches_back_to_the_last_spans_before_the_onset() -> None:
    source = _source()
    assert isinstance(source, SpanMetrics)
    z = duration_z(context(source))
    assert z["back"] > 3.0
    assert abs(z["front"]) < 1.0
    assert len(source.asked) == 2  # the baseline held none: the reach back was asked for
    assert duration_z(context(source)) == z


def test_a_baseline_with_span_metrics_is_enough() -> None:
    source = _source(minutes=[BASELINE.start + COVERAGE_STEP * k for k in range(1, 12)] + FAULT)
    z = duration_z(context(source))
    assert z["back"] > 3.0
    assert [w.start for w in source.asked] == [BASELINE.start]


def test_span_metrics_say_nothing_without_spans_a_past_of_their_own_or_a_backend() -> None:
    assert duration_z(context(_source(minutes=[]))) == {}
    assert duration_z(context(_source(minutes=FAULT))) == {}  # only the fault's minutes: no reference
    assert duration_z(context(_source(spans=3.0))) == {}  # too few spans per operation to compare
    assert duration_z(context(_source(down=True))) == {}
    assert duration_z(context(FakeSource((("front", "back"),)))) == {}  # spans, not span metrics
    assert INCIDENT.contains(FAULT[0])
