"""The changes tool on small synthetic telemetry: a change in the window is cited, and supported as a
bad deploy only when its new instances are worse than its old ones."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pytest

from rca.core.evidence import EvidenceSink, Verdict
from rca.core.grounding import Citation, nearest_citation
from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import (
    VERSIONED_POD,
    Alert,
    Conventions,
    DependencyGraph,
    Edge,
    Entity,
    Event,
    EventKind,
    LogRecord,
    MetricSeries,
    Modality,
    Span,
    TelemetryError,
    TelemetrySource,
    TimeWindow,
)
from rca.tools.base import EvidenceCapturingTool, ToolContext
from rca.tools.changes.analysis import split_instances
from rca.tools.changes.profile import canary_profile, changes_in_window
from rca.tools.changes.seeding import kind_hint
from rca.tools.changes.seeding import scores as entity_scores
from rca.tools.changes.tool import ChangesTool
from rca.tools.faults import FaultKind

T0 = 1_700_000_000.0
STEP = 60.0
ONSET = T0 + 60 * STEP  # one hour of history, then the alert
SHA_GOOD = "3f2a9c1d0b7e"
SHA_BAD = "a1b2c3d4e5f6"


class MemorySource:
    """An in-memory TelemetrySource: per-entity series and a list of events."""

    conventions = Conventions(version_token=VERSIONED_POD)  # pods are named `<service>-v<n>-<pod>`

    def __init__(
        self, series: Sequence[MetricSeries], events: Sequence[Event], *, fail: bool = False
    ) -> None:
        self._series = list(series)
        self._events = list(events)
        self._fail = fail

    def modalities(self) -> frozenset[Modality]:
        return frozenset({Modality.METRICS, Modality.CHANGES})

    def time_range(self) -> TimeWindow:
        return TimeWindow(T0, ONSET + 30 * STEP)

    def topology(self) -> DependencyGraph:
        names = ("frontend", "cart", "pay")
        return DependencyGraph(
            tuple(Entity(n) for n in names), (Edge("frontend", "cart"), Edge("frontend", "pay"))
        )

    def baseline_window(self, onset: float) -> TimeWindow | None:
        return TimeWindow(T0, onset - 20 * STEP)

    def metric_names(self, entity: str) -> Sequence[str]:
        return sorted({s.name for s in self._series if s.entity == entity})

    def metrics(
        self, entity: str, window: TimeWindow, names: Iterable[str] | None = None
    ) -> list[MetricSeries]:
        if self._fail:
            raise TelemetryError("memory", "backend unreachable")
        wanted = set(names) if names is not None else None
        out = []
        for s in self._series:
            if s.entity == entity and (wanted is None or s.name in wanted):
                part = s.within(window)
                if len(part):
                    out.append(part)
        return out

    def logs(
        self, entity: str, window: TimeWindow, pattern: str | None = None, limit: int = 10_000
    ) -> list[LogRecord]:
        return []

    def spans(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> list[Span]:
        return []

    def events(self, window: TimeWindow, entity: str | None = None) -> list[Event]:
        return [e for e in self._events if window.contains(e.time) and (entity is None or e.entity == entity)]


def _series(
    entity: str, name: str, pod: str, start: float, end: float, level: float, seed: int
) -> MetricSeries:
    times = np.arange(start, end, STEP)
    noise = np.random.default_rng(seed).normal(0.0, 0.01 * max(level, 1.0), times.size)
    return MetricSeries(entity, name, "%", times, level + noise, pod)


def _rollout(entity: str, ref: str, sha: str, start: float) -> list[Event]:
    """A canary rollout: a start event and one step that brings up the first new pod."""
    return [
        Event(
            start,
            entity,
            EventKind.DEPLOY,
            f"{entity}: rollout of {ref}",
            reference=sha,
            attributes={"phase": "start"},
        ),
        Event(
            start + STEP,
            entity,
            EventKind.DEPLOY,
            f"{entity}: step",
            reference=sha,
            instance=f"{entity}-{ref}-1",
            attributes={"phase": "step"},
        ),
    ]


def _service(entity: str, *, bad: bool, seed: int, rollout_at: float) -> list[MetricSeries]:
    """Three old pods serving throughout and one new pod from the rollout; a bad new pod fails."""
    end = ONSET + 10 * STEP
    out = []
    for i in range(3):
        pod = f"{entity}-v1-{i}"
        out.append(
            _series(entity, f"success_rate{{caller=frontend,callee={entity}}}", pod, T0, end, 100.0, seed + i)
        )
        out.append(_series(entity, "latency", pod, T0, end, 0.02, seed + 10 + i))
    pod = f"{entity}-v2-1"
    new_start = rollout_at + STEP
    out.append(
        _series(
            entity,
            f"success_rate{{caller=frontend,callee={entity}}}",
            pod,
            new_start,
            end,
            35.0 if bad else 100.0,
            seed + 20,
        )
    )
    out.append(_series(entity, "latency", pod, new_start, end, 0.02, seed + 21))
    return out


def _context(source: TelemetrySource) -> ToolContext:
    alert = Alert("checkout failing", "frontend", ONSET)
    incident = TimeWindow(ONSET - 10 * STEP, ONSET + 5 * STEP)
    baseline = source.baseline_window(incident.start)
    assert baseline is not None
    return ToolContext(source, alert, incident, baseline, source.topology())


@pytest.fixture
def concurrent() -> ToolContext:
    """cart and pay roll out at the same time; only pay's new pod degrades."""
    at = ONSET - 4 * STEP
    series = _service("cart", bad=False, seed=1, rollout_at=at) + _service(
        "pay", bad=True, seed=100, rollout_at=at
    )
    events = _rollout("cart", "v2", SHA_GOOD, at) + _rollout("pay", "v2", SHA_BAD, at + 1.0)
    return _context(MemorySource(series, events))


def citation_for(ctx: ToolContext, entity: str, path: Sequence[str]) -> Citation | None:
    """The citation the conclusion would pick from the citations the tool recorded."""
    changes_in_window(ctx)
    return nearest_citation(ctx.record.citations, ctx.onset, entities={entity, *path})


def _verdict(ctx: ToolContext, entity: str, kind: FaultKind = FaultKind.BAD_DEPLOY) -> Verdict:
    tool = EvidenceCapturingTool(ChangesTool(), EvidenceSink())
    return tool(ctx, Hypothesis(f"h-{entity}", entity, kind.value)).evidence.verdict


def test_defective_rollout_scores_highest_and_supports(concurrent: ToolContext) -> None:
    scores = entity_scores(concurrent)
    assert set(scores) == {"cart", "pay"}
    assert scores["pay"] > scores["cart"]
    result = ChangesTool().run(concurrent, Hypothesis("h-pay", "pay", FaultKind.BAD_DEPLOY.value))
    assert set(result.signals) == {"anomaly_score"}
    assert float(result.signals["anomaly_score"]) >= 0.8
    assert result.measurements["reference"] == SHA_BAD
    assert result.measurements["comparison"] == "canary"
    assert "\n" not in result.summary
    assert "pay" in result.summary
    assert _verdict(concurrent, "pay") is Verdict.SUPPORTS
    assert kind_hint(concurrent, "pay") is FaultKind.BAD_DEPLOY


def test_healthy_concurrent_rollout_stays_inconclusive(concurrent: ToolContext) -> None:
    result = ChangesTool().run(concurrent, Hypothesis("h-cart", "cart", FaultKind.BAD_DEPLOY.value))
    assert "anomaly_score" not in result.signals  # a quiet canary never refutes
    assert result.measurements["reference"] == SHA_GOOD
    assert _verdict(concurrent, "cart") is Verdict.INCONCLUSIVE
    assert kind_hint(concurrent, "cart") is None


def test_no_change_has_no_decisive_signal(concurrent: ToolContext) -> None:
    result = ChangesTool().run(concurrent, Hypothesis("h-fe", "frontend", FaultKind.BAD_DEPLOY.value))
    assert not result.signals
    assert result.summary == "changes: no change to frontend in the window"
    assert _verdict(concurrent, "frontend") is Verdict.INCONCLUSIVE
    assert canary_profile(concurrent, "frontend") is None


def test_failed_query_is_inconclusive() -> None:
    at = ONSET - 4 * STEP
    ctx = _context(MemorySource([], _rollout("pay", "v2", SHA_BAD, at), fail=True))
    assert _verdict(ctx, "pay") is Verdict.INCONCLUSIVE
    assert entity_scores(ctx) == {"pay": 0.0}


def test_change_after_the_alert_does_not_support() -> None:
    at = ONSET + 3 * STEP
    ctx = _context(
        MemorySource(_service("pay", bad=True, seed=5, rollout_at=at), _rollout("pay", "v2", SHA_BAD, at))
    )
    assert entity_scores(ctx) == {"pay": 0.0}
    assert _verdict(ctx, "pay") is Verdict.INCONCLUSIVE


def test_window_keeps_changes_only(concurrent: ToolContext) -> None:
    source = concurrent.source
    assert isinstance(source, MemorySource)
    source._events.append(Event(ONSET - 100.0, "cart", EventKind.POD_RESTART, "restarted"))
    source._events.append(Event(ONSET - 3 * 3600.0, "cart", EventKind.DEPLOY, "old", reference="0badc0de"))
    events = changes_in_window(_context(source))
    assert all(e.kind is EventKind.DEPLOY for e in events)
    assert {e.reference for e in events} == {SHA_GOOD, SHA_BAD}


def test_citation_picks_the_change_nearest_onset() -> None:
    events = [
        Event(ONSET - 3600.0, "pay", EventKind.DEPLOY, "early", reference="1111111aaaa"),
        Event(ONSET - 120.0, "pay", EventKind.COMMIT, "late", reference="2222222bbbb"),
        Event(ONSET - 60.0, "cart", EventKind.DEPLOY, "elsewhere", reference="3333333cccc"),
        Event(ONSET + 30.0, "pay", EventKind.DEPLOY, "after onset", reference="4444444dddd"),
        Event(ONSET - 20.0, "pay", EventKind.DEPLOY, "no identifier", reference="latest"),
    ]
    ctx = _context(MemorySource([], events))
    citation = citation_for(ctx, "pay", [])
    assert citation is not None
    assert (citation.ref, citation.kind, citation.entity) == ("2222222bbbb", "commit", "pay")
    on_path = citation_for(ctx, "pay", ["cart"])
    assert on_path is not None
    assert on_path.ref == "3333333cccc"
    assert citation_for(ctx, "frontend", []) is None


def test_a_recorded_release_id_is_citable() -> None:
    events = [
        Event(ONSET - 600.0, "pay", EventKind.COMMIT, "older", reference="2222222bbbb"),
        Event(ONSET - 60.0, "pay", EventKind.DEPLOY, "rollout", reference="v2-fd6989b7c"),
    ]
    citation = citation_for(_context(MemorySource([], events)), "pay", [])
    assert citation is not None
    assert (citation.ref, citation.kind) == ("v2-fd6989b7c", "deploy")


def test_split_by_version_token_without_event_hints() -> None:
    at = ONSET - 4 * STEP
    series = _service("pay", bad=True, seed=7, rollout_at=at)
    start_only = Event(at, "pay", EventKind.DEPLOY, "pay: rollout", reference=None)
    rollout_events = [start_only]
    ctx = _context(MemorySource(series, rollout_events))
    finding = canary_profile(ctx, "pay")
    assert finding is not None
    assert finding.new_instances == ("pay-v2-1",)
    assert set(finding.old_instances) == {"pay-v1-0", "pay-v1-1", "pay-v1-2"}
    new, old = split_instances(series, finding.rollout, MemorySource.conventions)
    assert new == frozenset({"pay-v2-1"})
    assert len(old) == 3


def _warning(entity: str, reason: str, message: str, count: int = 1) -> Event:
    """A Kubernetes warning about a pod of `entity`, as the Kubernetes connector reports one."""
    return Event(
        time=ONSET - 2 * STEP,
        entity=entity,
        kind=EventKind.K8S_WARNING,
        message=f"{reason}: {message}",
        instance=f"{entity}-v1-abcde",
        attributes={"k8s.event.reason": reason, "k8s.event.count": str(count), "k8s.event.type": "Warning"},
    )


@pytest.mark.parametrize(
    ("reason", "message", "kind", "supported"),
    [
        ("OOMKilling", "Memory cgroup out of memory: Killed process 4242 (java)", FaultKind.MEMORY, True),
        ("BackOff", "Back-off restarting failed container cart", FaultKind.POD_FAILURE, True),
        ("BackOff", "Back-off restarting failed container cart", FaultKind.MEMORY, False),
        ("OOMKilling", "Memory cgroup out of memory", FaultKind.CPU, False),
        ("FailedScheduling", "0/3 nodes are available: insufficient cpu", FaultKind.POD_FAILURE, False),
    ],
)
def test_kubernetes_warnings_support_the_kind_they_name(
    reason: str, message: str, kind: FaultKind, supported: bool
) -> None:
    ctx = _context(MemorySource([], [_warning("cart", reason, message, count=3)]))
    verdict = _verdict(ctx, "cart", kind)
    assert (verdict is Verdict.SUPPORTS) is supported
    assert _verdict(ctx, "pay", kind) is not Verdict.SUPPORTS  # another entity's warning says nothing


def test_a_family_the_new_pods_are_not_measured_in_is_compared_service_wide() -> None:
    """As a live cluster measures it: CPU per pod, old and new, the success rate per service only. The
    new version's failures show service-wide after the rollout; the per-pod CPU does not hide them."""
    at = ONSET - 4 * STEP
    end = ONSET + 10 * STEP
    series = [_series("pay", "cpu", f"pay-v1-{i}", T0, end, 20.0, 200 + i) for i in range(3)]
    series.append(_series("pay", "cpu", "pay-v2-1", at + STEP, end, 20.0, 210))
    times = np.arange(T0, end, STEP)
    noise = np.random.default_rng(220).normal(0.0, 1.0, times.size)
    rate = np.where(times >= at + STEP, 60.0, 100.0) + noise
    series.append(MetricSeries("pay", "success_rate", "%", times, rate, None))
    ctx = _context(MemorySource(series, _rollout("pay", "v2", SHA_BAD, at)))
    result = ChangesTool().run(ctx, Hypothesis("h-pay", "pay", FaultKind.BAD_DEPLOY.value))
    assert result.measurements["comparison"] == "baseline_only"
    assert result.measurements["metric"] == "success_rate"
    assert "success_rate service-wide 100" in result.summary
    assert "no new-version instances" not in result.summary  # there is one, measured in CPU only
    assert float(result.signals["anomaly_score"]) >= 0.8


def test_failures_after_a_rollout_score_alike_read_as_a_success_rate_or_as_an_error_ratio() -> None:
    """A service whose success rate sat at exactly 100 % drops to 92.5 % after a rollout (7.5 % of its
    calls failing); another cluster records the same failures as an error ratio, 0 -> 0.075. The
    changes tool floors both spreads on the scale of the success rate (0.2 % of it, as the metrics tool
    does), so the two read the same z and both support the change."""
    at = ONSET - 4 * STEP
    end = ONSET + 10 * STEP
    times = np.arange(T0, end, STEP)
    after = times >= at + STEP
    results = []
    for name, before, failing in (("success_rate", 100.0, 92.5), ("error_ratio", 0.0, 0.075)):
        values = np.where(after, failing, before)
        series = [MetricSeries("pay", name, "%" if name == "success_rate" else "1", times, values, None)]
        series += [_series("pay", "cpu", f"pay-v1-{i}", T0, end, 20.0, 300 + i) for i in range(3)]
        ctx = _context(MemorySource(series, _rollout("pay", "v2", SHA_BAD, at)))
        results.append(ChangesTool().run(ctx, Hypothesis("h-pay", "pay", FaultKind.BAD_DEPLOY.value)))
    rate, ratio = results
    assert rate.measurements["pre_change_z"] == pytest.approx(ratio.measurements["pre_change_z"], rel=0.01)
    assert float(rate.signals["anomaly_score"]) >= 0.8
    assert float(ratio.signals["anomaly_score"]) >= 0.8
