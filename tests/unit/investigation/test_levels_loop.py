"""Hypothesis levels in the loop: drill-down to the fault kind and the detail, and backtracking."""

from __future__ import annotations

from pathlib import Path

import pytest

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis, HypothesisState
from rca.core.levels import refined
from rca.investigation.controller import Controller, LoopSettings
from rca.investigation.engine import EngineConfig, investigate, windows
from rca.investigation.policy import OfflinePolicy
from rca.investigation.seed import Suspect
from rca.telemetry.cases import RecordedCase, load_case, read_index
from rca.tools.base import ToolContext
from rca.tools.changes.tool import ChangesTool
from rca.tools.faults import FaultKind
from rca.tools.metrics.tool import MetricsTool
from tests.unit.investigation.scenario import ScriptedTool, build, propagate_latency

CHAIN = [("frontend", "checkout"), ("checkout", "payment"), ("frontend", "catalog")]
DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
PODS = {"payment": [("payment-a", 0), ("payment-b", 0)]}


def _cpu_in_payment_pod_a() -> tuple[dict[tuple[str, str], float], dict[str, float]]:
    faults = propagate_latency(["payment", "checkout", "frontend"], 3.0)
    faults[("payment", "cpu")] = 4.0
    return faults, {"payment-a": 4.0}


def test_the_engine_drills_from_the_service_to_the_kind_to_the_pod() -> None:
    faults, pod_faults = _cpu_in_payment_pod_a()
    source, alert = build(CHAIN, faults, pods=PODS, pod_faults=pod_faults)
    result = investigate(source, alert)
    assert result.root_cause is not None
    assert (result.root_cause.entity, result.root_cause.fault_kind) == ("payment", "cpu")
    assert result.root_cause.detail == "instance:payment-a"
    by_id = {h.id: h for h in result.hypotheses}
    service = next(h for h in result.hypotheses if h.parent_id is None and h.entity == "payment")
    kinds = [h for h in result.hypotheses if h.parent_id == service.id]
    assert {h.fault_kind for h in kinds} >= {"cpu"}
    cpu = next(h for h in kinds if h.fault_kind == "cpu")
    assert cpu.state is HypothesisState.VALIDATED
    # The latency moved as much, but the entity's own cpu explains it: a symptom, not the kind.
    latency = next(h for h in kinds if h.fault_kind == "latency")
    assert latency.state is HypothesisState.INCONCLUSIVE
    assert "its own cpu moved" in latency.evidence[0].summary
    pods = {h.detail: h.state for h in result.hypotheses if h.parent_id == cpu.id}
    assert pods == {
        "instance:payment-a": HypothesisState.VALIDATED,
        "instance:payment-b": HypothesisState.INVALIDATED,
    }
    assert all(by_id[h.parent_id].entity == h.entity for h in result.hypotheses if h.parent_id)
    drills = [s for s in result.steps if s.rationale.startswith("drill down")]
    assert drills
    assert {s.turn for s in drills} == {result.steps[0].turn}  # refined within the turn that proved it
    assert result.turns == 1


def test_without_a_clear_lead_the_loop_does_not_drill() -> None:
    faults, pod_faults = _cpu_in_payment_pod_a()
    source, alert = build(CHAIN, faults, pods=PODS, pod_faults=pod_faults)
    result = investigate(source, alert, EngineConfig(refine=False))
    assert all(h.parent_id is None for h in result.hypotheses)
    assert result.root_cause is not None
    assert result.root_cause.detail == ""


def test_refuted_details_demote_their_kind_and_the_loop_backtracks_to_its_sibling() -> None:
    """The cpu kind leads; every pod below it is refuted; latency takes the lead, cpu's pods are pruned
    and the loop drills into latency instead."""
    faults, _ = _cpu_in_payment_pod_a()
    source, alert = build(CHAIN, faults, pods=PODS)
    supports, refutes = 0.95, 0.0

    def metrics(h: Hypothesis) -> float | None:
        if h.detail.startswith("instance:"):
            return refutes  # no pod shows the cpu deviation
        if h.detail.startswith("metric:"):
            return supports
        return supports if h.fault_kind in ("cpu", "latency") else refutes

    def traces(h: Hypothesis) -> float | None:
        return supports if h.fault_kind == "cpu" and not h.detail else None

    tools = {
        "metrics": ScriptedTool("metrics", Source.METRICS, metrics),
        "traces": ScriptedTool("traces", Source.TRACES, traces),
    }
    incident, baseline = windows(source, alert, EngineConfig())
    ctx = ToolContext(source, alert, incident, baseline, source.topology())
    controller = Controller(ctx, OfflinePolicy(), tools, LoopSettings())
    outcome = controller.run(
        [Suspect("payment", 5.0, FaultKind.CPU), Suspect("checkout", 1.0, FaultKind.LATENCY)]
    )
    ids = {h.id for h in outcome.tree.hypotheses}
    service = "h00-payment-cpu"
    assert {f"{service}/cpu", f"{service}/latency"} <= ids
    # The pods below cpu stay in the record, refuted; the search went on below latency.
    assert {i for i in ids if i.startswith(f"{service}/cpu/")} == {
        f"{service}/cpu/instance:payment-a",
        f"{service}/cpu/instance:payment-b",
    }
    assert f"{service}/latency/metric:latency_p90" in ids
    backtracks = [s for s in outcome.steps if s.rationale.startswith("backtrack")]
    assert [s.hypothesis_id for s in backtracks] == [f"{service}/cpu"]
    assert "fell below h00-payment-cpu/latency" in backtracks[0].rationale
    assert "subtree of 2 hypotheses is pruned" in backtracks[0].rationale
    named = refined(outcome.tree, outcome.tree.get(service) or outcome.tree.hypotheses[0])
    assert named.id == f"{service}/latency/metric:latency_p90"


def _dev_case(dataset: str, case_id: str) -> RecordedCase:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    ref = next(r for r in read_index(DATA, split="dev", datasets=(dataset,)) if r.case_id == case_id)
    return load_case(DATA, ref)


def test_on_a_changerca_rollout_the_levels_name_the_bad_deploy_and_its_release() -> None:
    case = _dev_case("changerca-ob", "changerca/2023-09-22_1")
    result = investigate(case.source, case.alert)
    assert result.root_cause is not None
    assert result.root_cause.fault_kind == "bad_deploy"
    what, _, release = result.root_cause.detail.partition(":")
    assert what == "change"
    assert result.chain.citation is not None
    assert release == result.chain.citation.ref  # the release the detail names is the one cited
    named = next(h for h in result.hypotheses if h.detail == result.root_cause.detail)
    assert named.state is HypothesisState.VALIDATED
    assert [e.tool for e in named.evidence] == ["changes"]


def test_a_detail_naming_another_release_is_not_supported_by_the_changes_tool() -> None:
    case = _dev_case("changerca-ob", "changerca/2023-09-22_1")
    result = investigate(case.source, case.alert)
    assert result.root_cause is not None
    incident, baseline = windows(case.source, case.alert, EngineConfig())
    ctx = ToolContext(case.source, case.alert, incident, baseline, case.source.topology())
    other = Hypothesis("x", result.root_cause.entity, "bad_deploy", "p", detail="change:v9-not-this-one")
    answer = ChangesTool().run(ctx, other)
    assert "anomaly_score" not in answer.signals
    assert "v9-not-this-one is not the change nearest to onset" in answer.summary
    unmeasured = MetricsTool().run(
        ctx, Hypothesis("y", result.root_cause.entity, "cpu", "p", detail="instance:nope")
    )
    assert unmeasured.signals == {}
    assert "unmeasured for this detail" in unmeasured.summary


def test_refinement_changes_what_is_named_not_how_far_it_may_go() -> None:
    case = _dev_case("changerca-ob", "changerca/2023-09-22_1")
    refined_run = investigate(case.source, case.alert)
    flat_run = investigate(case.source, case.alert, EngineConfig(refine=False))
    assert refined_run.root_cause is not None
    assert flat_run.root_cause is not None
    assert refined_run.root_cause.entity == flat_run.root_cause.entity
    assert refined_run.outcome == flat_run.outcome  # the tier and confidence rest on the proven service
    assert refined_run.outcome.tier.value == "pull_request"
