"""The evidence rules that keep confident exits precise, each on a constructed incident."""

from __future__ import annotations

import numpy as np

from rca.core.evidence import Verdict
from rca.investigation.engine import EngineConfig, investigate, windows
from rca.telemetry.model import Event, EventKind, MetricSeries
from rca.tools.base import ToolContext
from rca.tools.changes.profile import change_facts
from rca.tools.metrics.profile import metric_profile
from rca.tools.stats import Family
from tests.unit.investigation.scenario import ONSET, STEP, build

CHAIN = [("frontend", "checkout"), ("checkout", "payment"), ("payment", "db")]


def _ctx(source, alert) -> ToolContext:  # type: ignore[no-untyped-def]
    incident, baseline = windows(source, alert, EngineConfig())
    return ToolContext(source, alert, incident, baseline, source.topology())


def changed_downstream(ctx: ToolContext, entity: str) -> list[str]:
    """The changed services below `entity`, from the change facts the changes tool records."""
    return change_facts(ctx).changed_below(ctx.digraph, entity)


def test_a_view_is_never_proven_and_never_a_rival() -> None:
    # `frontend` records its calls to the search endpoint as a `remote` view; `search` is the component.
    edges = [*CHAIN, ("frontend", "search"), ("frontend", "search_remote")]
    faults = {
        ("search", "latency_p90"): 3.0,
        ("search_remote", "latency_p90"): 3.2,
        ("frontend", "latency_p90"): 1.5,
    }
    source, alert = build(edges, faults, kinds={"search_remote": "remote"})
    result = investigate(source, alert)
    # The rule under test is the gate's (validation and ranking), before the calibrated exit.
    assert result.validated
    assert result.candidates[0].entity == "search"  # the view, deviating more, does not contest it
    view = [h for h in result.hypotheses if h.entity == "search_remote"]
    assert all(e.verdict is not Verdict.SUPPORTS for h in view for e in h.evidence)


def test_a_level_held_while_the_symptom_was_quiet_is_discounted() -> None:
    # `batch` was slow from minute 53 on, before the symptom appeared at onset (minute 60): most of the
    # incident window before the alert (minutes 52-61) already held its level.
    edges = [*CHAIN, ("frontend", "batch")]
    faults = {
        ("checkout", "latency_p90"): 3.0,
        ("frontend", "latency_p90"): 2.0,
        ("batch", "latency_p90"): 6.0,
    }
    source, alert = build(edges, faults, starts={("batch", "latency_p90"): 53})
    ctx = _ctx(source, alert)
    assert metric_profile(ctx, "batch").z(Family.LATENCY) < 3.0
    result = investigate(source, alert)
    assert result.root_cause is not None
    assert result.root_cause.entity == "checkout"


def test_no_discount_when_the_alert_does_not_time_the_symptom() -> None:
    # The alert's metric never moves, so nothing says the fault began at onset: keep the full deviation.
    source, alert = build(
        CHAIN, {("payment", "cpu"): 4.0}, starts={("payment", "cpu"): 53}, alert_metric="memory"
    )
    assert metric_profile(_ctx(source, alert), "payment").z(Family.CPU) > 10.0
    result = investigate(source, alert)
    assert result.root_cause is not None
    assert result.root_cause.entity == "payment"


def test_a_family_that_explains_the_alert_only_in_part_is_no_proof() -> None:
    # An availability alert; the only mover is a latency rise: a lead, not proof.
    faults = {("db", "latency_p90"): 4.0}
    source, alert = build(CHAIN, faults, alert_metric="success_rate")
    result = investigate(source, alert)
    assert result.exit == "no_confident_root_cause"
    assert result.candidates[0].entity == "db"


def test_a_late_own_change_does_not_shield_a_caller_from_a_changed_callee() -> None:
    # checkout fails; its own change came after the alert (it explains nothing), payment changed before.
    events = [
        Event(ONSET + 3 * STEP, "checkout", EventKind.DEPLOY, "deploy checkout v2", reference="v2-a"),
        Event(ONSET - 4 * STEP, "payment", EventKind.DEPLOY, "deploy payment v2", reference="v2-b"),
        Event(ONSET + 3 * STEP, "db", EventKind.DEPLOY, "deploy db v2", reference="v2-c"),  # after the alert
    ]
    source, alert = build(CHAIN, {("checkout", "success_rate"): 0.5}, events=events)
    ctx = _ctx(source, alert)
    assert changed_downstream(ctx, "checkout") == ["payment"]
    result = investigate(source, alert)
    checkout = [h for h in result.hypotheses if h.entity == "checkout"]
    assert all(e.verdict is not Verdict.SUPPORTS for h in checkout for e in h.evidence if e.tool == "metrics")


def test_a_replaced_pod_carrying_its_successor_is_cut_at_the_handover() -> None:
    from rca.tools.metrics.analysis import handed_over

    t = ONSET + STEP * np.arange(-5, 5, dtype=float)
    old = np.array([5.0, 5.1, 4.9, 5.0, 5.2, 86.0, 85.0, 86.5, 84.9, 86.1])
    new_t = t[5:]
    new = old[5:].copy()
    series = [
        MetricSeries("ad", "memory_utilization", "%", t, old, instance="ad-v1-x-1"),
        MetricSeries("ad", "memory_utilization", "%", new_t, new, instance="ad-v2-y-1"),
    ]
    kept = handed_over(series, {("memory_utilization", "ad-v1-x-1")})
    assert float(kept[0].values.max()) < 6.0  # the old pod keeps only its own points
    assert len(kept[1]) == 5


def test_flat_values_shared_by_chance_are_no_handover() -> None:
    from rca.tools.metrics.analysis import handed_over

    t = ONSET + STEP * np.arange(0, 6, dtype=float)
    flat = np.full(6, 100.0)
    series = [
        MetricSeries("ad", "success_rate", "%", t, flat, instance="ad-v1-x-1"),
        MetricSeries("ad", "success_rate", "%", t, flat.copy(), instance="ad-v2-y-1"),
    ]
    assert len(handed_over(series, {("success_rate", "ad-v1-x-1")})[0]) == 6


def test_kind_follows_the_family_that_explains_the_alert() -> None:
    from rca.tools.metrics.seeding import kind_hint as metric_kind

    faults = {("db", "latency_p90"): 2.0, ("db", "success_rate"): 0.9}
    source, alert = build(CHAIN, faults, alert_metric="success_rate")
    kind = metric_kind(_ctx(source, alert), "db")
    assert kind is not None
    assert kind.value == "errors"


# --- rules for concurrent rollouts and thin references ---------------------------------------------------
FAN = [("frontend", "checkout"), ("checkout", "cart"), ("checkout", "currency"), ("frontend", "currency")]


def _rollout(entity: str, minutes_before: int, pod: str) -> list[Event]:
    """A rollout that names its new pod (start + first step), `minutes_before` the alert fires."""
    start = ONSET + 2 * STEP - minutes_before * STEP
    return [
        Event(start, entity, EventKind.DEPLOY, f"rollout of {entity}", reference="v2-abc"),
        Event(start + STEP, entity, EventKind.DEPLOY, "step", reference="v2-abc", instance=pod),
    ]


def test_an_error_burst_is_a_move_not_a_refutation() -> None:
    # cart fails in two minutes only: too few for the window quantile, too many to say it did not move.
    faults = {("cart", "success_rate"): 0.6, ("checkout", "success_rate"): 0.6}
    source, alert = build(FAN, faults, starts=dict.fromkeys(faults, 61), ends=dict.fromkeys(faults, 63))
    ctx = _ctx(source, alert)
    assert metric_profile(ctx, "cart").z(Family.ERRORS) < 3.0
    from rca.tools.metrics.profile import error_burst

    assert error_burst(ctx, "cart") >= 3.0
    assert error_burst(ctx, "checkout") == 0.0  # its burst is its callee's
    from rca.core.hypotheses import Hypothesis
    from rca.core.verdict import DEFAULT_THRESHOLDS
    from rca.tools.metrics.tool import MetricsTool

    found = MetricsTool().run(ctx, Hypothesis("h", "cart", "errors"))
    score = found.signals["anomaly_score"]
    assert isinstance(score, float)
    assert DEFAULT_THRESHOLDS.anomaly_refutes < score < DEFAULT_THRESHOLDS.anomaly_supports


def test_a_rollout_whose_new_version_never_served_ranks_but_proves_nothing() -> None:
    from rca.tools.changes.analysis import NEVER_SERVED_Z

    pods = {"cart": [("cart-v1-a-1", 0), ("cart-v2-abc-1", None)]}
    rollout = _rollout("cart", 3, "cart-v2-abc-1")
    source, alert = build(FAN, {("checkout", "success_rate"): 0.5}, events=rollout, pods=pods)
    facts = change_facts(_ctx(source, alert))
    assert facts.never_served("cart")
    assert facts.scores()["cart"] >= NEVER_SERVED_Z
    result = investigate(source, alert)
    assert result.exit == "no_confident_root_cause"  # checkout is contested by the change below it
    assert [c.entity for c in result.candidates[:2]] == [
        "cart",
        "checkout",
    ]  # the unchanged caller follows it


def test_a_new_version_that_serves_is_not_never_served() -> None:
    pods = {"cart": [("cart-v1-a-1", 0), ("cart-v2-abc-1", 60)]}
    source, alert = build(FAN, {}, events=_rollout("cart", 3, "cart-v2-abc-1"), pods=pods)
    assert not change_facts(_ctx(source, alert)).never_served("cart")


def test_a_worse_change_beside_an_unchanged_service_contests_its_metrics() -> None:
    from rca.tools.metrics.profile import worse_change_elsewhere

    # currency fails clearly, but cart (not below it) had a rollout whose new version never served.
    pods = {"cart": [("cart-v1-a-1", 0), ("cart-v2-abc-1", None)]}
    rollout = _rollout("cart", 3, "cart-v2-abc-1")
    failing = {("currency", "success_rate"): 0.5}
    source, alert = build(FAN, failing, events=rollout, pods=pods, alert_metric="success_rate")
    ctx = _ctx(source, alert)
    assert changed_downstream(ctx, "currency") == []
    assert worse_change_elsewhere(ctx, "currency") == ["cart"]
    result = investigate(source, alert)
    currency = [
        e for h in result.hypotheses if h.entity == "currency" for e in h.evidence if e.tool == "metrics"
    ]
    assert currency
    assert all(e.verdict is not Verdict.SUPPORTS for e in currency)
    # Without the rollout the same failure is proven.
    clean, clean_alert = build(FAN, failing, alert_metric="success_rate")
    proven = investigate(clean, clean_alert)
    assert proven.root_cause is not None
    assert proven.root_cause.entity == "currency"


def test_a_thin_reference_ranks_but_never_proves() -> None:
    # Two minutes of history before onset: the window starts after the recording's first three samples,
    # which are all the baseline there is: a clear rise at `payment`, measured against too few points to
    # decide (rca.tools.stats.DECISIVE_SAMPLES).
    faults = {("payment", "latency_p90"): 4.0, ("checkout", "latency_p90"): 4.0}
    source, alert = build(CHAIN, faults, starts=dict.fromkeys(faults, 62), history=2)
    ctx = _ctx(source, alert)
    finding = metric_profile(ctx, "payment").findings[Family.LATENCY]
    assert finding.deviation.samples == 3
    assert finding.deviation.thin
    assert finding.deviation.z > 3.0
    result = investigate(source, alert)
    assert result.exit == "no_confident_root_cause"
    assert result.candidates[0].entity == "payment"  # checkout's rise is payment's


def _failing_minutes(*services: str) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], int], dict]:  # type: ignore[type-arg]
    """Two minutes of 5 % failures from the alert's minute on, at each of `services`: a 15-minute
    window's 80th percentile does not reach them."""
    keys = [(s, "success_rate") for s in services]
    return dict.fromkeys(keys, 0.95), dict.fromkeys(keys, 62), dict.fromkeys(keys, 64)


def test_a_burst_of_the_alerting_entitys_own_failures_seeds_it_as_an_errors_suspect() -> None:
    from rca.tools.faults import FaultKind
    from rca.tools.metrics.seeding import kind_hint, scores

    faults, starts, ends = _failing_minutes("frontend")
    source, alert = build(CHAIN, faults, starts=starts, ends=ends, alert_metric="success_rate")
    ctx = _ctx(source, alert)
    assert metric_profile(ctx, "frontend").z(Family.ERRORS) < 3.0  # the window quantile misses it
    assert scores(ctx)["frontend"] > 10.0
    assert kind_hint(ctx, "frontend") is FaultKind.ERRORS
    result = investigate(source, alert)
    assert result.candidates[0].entity == "frontend"
    assert result.exit == "no_confident_root_cause"  # a burst ranks; it does not prove


def test_a_burst_seeds_only_the_alerting_entity_and_only_net_of_its_callees() -> None:
    from rca.tools.metrics.seeding import scores

    faults, starts, ends = _failing_minutes("checkout")
    ctx = _ctx(*build(CHAIN, faults, starts=starts, ends=ends, alert_metric="success_rate"))
    assert scores(ctx)["checkout"] < 3.0  # not the entity the alert watched
    faults, starts, ends = _failing_minutes("frontend", "checkout")
    ctx = _ctx(*build(CHAIN, faults, starts=starts, ends=ends, alert_metric="success_rate"))
    assert scores(ctx)["frontend"] < 3.0  # its callee failed as much: the failures began below it
