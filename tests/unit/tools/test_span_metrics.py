"""Span durations read from span metrics (`rca.tools.span_metrics`): the cases where they say nothing.
Their reading of a real Prometheus is tested in tests/live/test_live_prometheus.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rca.telemetry.model import MetricSeries, OperationDurations, TelemetryError, TimeWindow
from rca.tools.metrics.profile import measured_by_caller, metric_profile, spans_disown
from rca.tools.span_metrics import COVERAGE_STEP, SpanMetrics, duration_z
from rca.tools.stats import Family
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


NORMAL = [ONSET - 3000.0 + COVERAGE_STEP * k for k in range(1, 13)]  # before the baseline


def _source(**options: object) -> SpanMetricsSource:
    medians = {"front": (0.02, 0.021), "back": (0.02, 0.2), "db": (0.01, 0.0101)}
    found = {"edges": (("front", "back"), ("back", "db")), "minutes": NORMAL + FAULT, "medians": medians}
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


@dataclass
class SlowBack(SpanMetricsSource):
    """A latency series of back's, `series`, reported by `reporter`, rises tenfold at the onset; back's
    spans' durations do not."""

    series: str = "latency_p99"
    reporter: str = "back"

    def metric_names(self, entity: str) -> list[str]:
        return [self.series] if entity == self.reporter else []

    def metrics(self, entity: str, window: TimeWindow, names: object = None) -> list[MetricSeries]:
        if entity != self.reporter:
            return []
        t = np.arange(BASELINE.start, INCIDENT.end, COVERAGE_STEP / 4)
        wobble = 0.002 * np.sin(t)
        v = np.where(t >= ONSET, 0.2, 0.02) + wobble
        keep = (t >= window.start) & (t < window.end)
        return [MetricSeries(entity, self.series, "s", t[keep], v[keep])]


def test_span_durations_disown_a_server_side_latency_but_not_a_callers_record_of_its_calls() -> None:
    flat = {"front": (0.02, 0.021), "back": (0.02, 0.0205), "db": (0.01, 0.0101)}
    found = {"edges": (("front", "back"), ("back", "db")), "minutes": NORMAL + FAULT, "medians": flat}
    served = context(SlowBack(**found))  # type: ignore[arg-type]
    disowned = spans_disown(served, "back", Family.LATENCY)
    assert disowned is not None
    assert disowned[1] == "span durations"
    # front's record of its calls into back holds the network between them, which back's spans miss
    edge = "client_latency_p99{caller=front,callee=back}"
    called = context(SlowBack(**found, series=edge, reporter="front"))  # type: ignore[arg-type]
    assert metric_profile(called, "back").findings[Family.LATENCY].metric == edge
    assert spans_disown(called, "back", Family.LATENCY) is None
    assert measured_by_caller(edge, "back")
    assert not measured_by_caller("client_latency_p99{caller=back,callee=db}", "back")
    assert not measured_by_caller("latency_p99", "back")
