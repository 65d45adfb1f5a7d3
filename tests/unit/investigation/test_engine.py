"""The engine end to end on constructed incidents: conclusions, the gate, grounding and tiers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rca.core.actions import ActionTier, OutcomeKind
from rca.core.calibration import CalibrationError, CalibrationMap
from rca.core.grounding import Grounding
from rca.core.modes import Mode
from rca.investigation.calibration import load_calibration
from rca.investigation.document import document_of
from rca.investigation.engine import EngineConfig, investigate
from rca.investigation.result import Belief
from rca.telemetry.model import Event, EventKind, TelemetryError
from tests.unit.investigation.scenario import ONSET, build, propagate_latency

CHAIN = [("frontend", "checkout"), ("checkout", "payment"), ("payment", "db"), ("frontend", "catalog")]


def cpu_in_payment() -> dict[tuple[str, str], float]:
    faults = propagate_latency(["payment", "checkout", "frontend"], 3.0)
    faults[("payment", "cpu")] = 4.0
    return faults


def test_origin_found_with_its_path_and_capped_below_pull_request() -> None:
    source, alert = build(CHAIN, cpu_in_payment())
    result = investigate(source, alert)
    assert result.exit == "confident"
    assert result.root_cause is not None
    assert result.root_cause.entity == "payment"
    assert result.root_cause.fault_kind == "cpu"
    assert result.candidates[0].entity == "payment"
    assert [(h.cause, h.effect) for h in result.path] == [("payment", "checkout"), ("checkout", "frontend")]
    assert all(h.edge for h in result.path)
    assert result.beliefs["payment"] is Belief.ORIGIN
    # hard evidence but no change citation: partially grounded, so never a pull request
    assert result.chain.grounding is Grounding.PARTIALLY_GROUNDED
    assert result.outcome.tier is not ActionTier.PULL_REQUEST
    assert result.outcome.confidence.capped <= 0.84
    assert result.gate.auto_remediates is False
    assert result.gate.clause == 1


def test_latency_inherited_from_a_callee_is_not_an_origin() -> None:
    source, alert = build(CHAIN, propagate_latency(["db", "payment", "checkout", "frontend"], 3.0))
    result = investigate(source, alert)
    assert result.candidates[0].entity == "db"
    assert result.root_cause is not None
    assert result.root_cause.entity == "db"


def test_nothing_wrong_is_no_confident_root_cause() -> None:
    source, alert = build(CHAIN, {})
    result = investigate(source, alert)
    assert result.exit == "no_confident_root_cause"
    assert result.root_cause is None
    assert result.outcome.kind is OutcomeKind.NO_CONFIDENT_ROOT_CAUSE
    assert result.outcome.tier is ActionTier.NOTIFY
    assert result.gate.exit.value == "no_confident_root_cause"


def test_two_services_alike_stay_unproven() -> None:
    # two leaves deviate the same way and neither explains the other: the metrics cannot tell
    faults = {("payment", "cpu"): 4.0, ("catalog", "cpu"): 4.0}
    faults.update(propagate_latency(["payment", "checkout", "frontend", "catalog"], 2.0))
    source, alert = build(CHAIN, faults)
    result = investigate(source, alert)
    assert result.exit == "no_confident_root_cause"
    assert {c.entity for c in result.candidates[:2]} == {"payment", "catalog"}


def test_shadow_gate_names_its_best_guess_unproven() -> None:
    faults = {("payment", "cpu"): 4.0, ("catalog", "cpu"): 4.0}
    source, alert = build(CHAIN, faults)
    result = investigate(source, alert, EngineConfig(gate_mode=Mode.SHADOW))
    assert result.exit == "confident"  # the legacy stop trusts the ranking
    assert result.gate.exit.value == "no_confident_root_cause"  # what the gate would have said
    assert result.chain.grounding is Grounding.UNGROUNDED
    assert result.outcome.tier in (ActionTier.NOTIFY, ActionTier.ISSUE)


def test_budget_exhausted_before_the_origin_is_visited() -> None:
    source, alert = build(CHAIN, cpu_in_payment())
    config = EngineConfig(max_turns=0)
    result = investigate(source, alert, config)
    assert result.exit == "no_confident_root_cause"
    assert result.gate.state.value == "budget_exhausted"
    assert result.turns == 0


def test_change_citation_grounds_the_conclusion() -> None:
    deploy = Event(ONSET - 120, "payment", EventKind.COMMIT, "tighten pool size", reference="3f9a2c1d8e7b")
    source, alert = build(CHAIN, cpu_in_payment(), events=[deploy])
    result = investigate(source, alert)
    assert result.root_cause is not None
    assert result.root_cause.entity == "payment"
    assert result.chain.citation is not None
    assert result.chain.citation.ref == "3f9a2c1d8e7b"
    assert result.chain.grounding is Grounding.GROUNDED


def test_deterministic_and_byte_identical() -> None:
    source, alert = build(CHAIN, cpu_in_payment())
    first = document_of(investigate(source, alert)).to_json()
    source, alert = build(CHAIN, cpu_in_payment())
    second = document_of(investigate(source, alert)).to_json()
    for doc in (first, second):
        doc.pop("elapsed_s")
    assert first == second


def test_cap_shadow_lets_raw_confidence_choose_the_tier() -> None:
    source, alert = build(CHAIN, cpu_in_payment())
    active = investigate(source, alert)
    shadow = investigate(*build(CHAIN, cpu_in_payment()), replace(EngineConfig(), cap_mode=Mode.SHADOW))
    assert active.outcome.confidence.raw == shadow.outcome.confidence.raw
    assert shadow.outcome.confidence.governing == shadow.outcome.confidence.raw


def test_the_calibration_withholds_a_validated_exit_below_its_threshold() -> None:
    free = investigate(*build(CHAIN, cpu_in_payment()), replace(EngineConfig(), calibration=None))
    assert free.exit == "confident"
    assert free.calibrated_probability is None
    strict = CalibrationMap("top_score", (0.0, 1e9), (0.0, 0.5), threshold=0.9)
    active = replace(EngineConfig(), calibration=strict, calibration_mode=Mode.ACTIVE)
    result = investigate(*build(CHAIN, cpu_in_payment()), active)
    assert result.validated
    assert result.exit == "no_confident_root_cause"
    assert result.root_cause is None
    assert result.path == ()
    assert result.candidates[0].entity == "payment"  # the ranking is untouched: only the exit is judged
    assert result.calibrated_probability is not None
    assert 0.0 < result.calibrated_probability < 0.5
    assert "below the confident threshold 0.90" in result.stop_reason
    assert result.outcome.kind is OutcomeKind.NO_CONFIDENT_ROOT_CAUSE
    assert result.guidance is not None
    stored = document_of(result).outcome.calibrated_probability
    assert stored == round(result.calibrated_probability, 4)


def test_the_stored_calibration_governs_by_default_and_shadow_only_reports() -> None:
    stored = load_calibration()
    assert EngineConfig().calibration == stored
    assert EngineConfig().calibration_mode is Mode.ACTIVE
    result = investigate(*build(CHAIN, cpu_in_payment()))
    assert result.calibrated_probability == stored.apply(result.calibration_scores)
    passes = stored.confident(result.calibration_scores, validated=result.validated)
    assert (result.exit == "confident") is passes  # active: validated and at the threshold
    strict = CalibrationMap("top_score", (0.0, 1e9), (0.0, 0.5), threshold=0.9)
    withheld = investigate(*build(CHAIN, cpu_in_payment()), replace(EngineConfig(), calibration=strict))
    assert withheld.validated
    assert withheld.exit == "no_confident_root_cause"
    only_reports = replace(EngineConfig(), calibration=strict, calibration_mode=Mode.SHADOW)
    shadow = investigate(*build(CHAIN, cpu_in_payment()), only_reports)
    assert shadow.exit == "confident"
    assert shadow.calibrated_probability is not None
    assert shadow.calibrated_probability < strict.threshold


def test_a_missing_or_malformed_calibration_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "calibration.json"
    bad.write_text('{"map": {"feature": "nope", "x": [0], "y": [0]}}')
    with pytest.raises(CalibrationError, match=r"calibration\.json"):
        load_calibration(bad)
    with pytest.raises(CalibrationError, match=r"missing\.json"):
        load_calibration(tmp_path / "missing.json")


def test_a_recording_that_begins_shortly_before_the_alert_keeps_its_first_samples_as_baseline() -> None:
    from rca.investigation.engine import windows

    # Five minutes of record before the alert (it fires two minutes after the onset): a 10-minute window
    # would swallow them all and leave no baseline.
    source, alert = build(CHAIN, cpu_in_payment(), history=3)
    incident, baseline = windows(source, alert, EngineConfig())
    held = source.time_range()
    assert baseline.start == held.start
    assert held.start + 2 * 60 < baseline.end == incident.start < held.start + 3 * 60  # after the 3rd sample
    assert incident.end == alert.fired_at + EngineConfig().after_onset_s
    result = investigate(source, alert)
    assert result.candidates[0].entity == "payment"
    assert result.exit == "no_confident_root_cause"  # three points of normal decide nothing


def test_the_window_is_not_cut_when_the_record_before_the_alert_is_too_short_or_long_enough() -> None:
    from rca.investigation.engine import windows

    two, alert = build(CHAIN, cpu_in_payment(), history=0)  # two samples before the alert: no baseline
    incident, baseline = windows(two, alert, EngineConfig())
    assert incident.start == two.time_range().start
    assert baseline.seconds == 0
    full, alert = build(CHAIN, cpu_in_payment())
    incident, baseline = windows(full, alert, EngineConfig())
    assert incident.start == alert.fired_at - EngineConfig().before_onset_s == baseline.end


class _Unreachable:
    """A source whose metrics backend cannot be reached (as a live one's may not be)."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def metric_names(self, entity: str) -> list[str]:
        raise TelemetryError("prometheus", "unreachable")


def test_the_window_stays_as_it_was_when_the_source_cannot_count_its_samples() -> None:
    from rca.investigation.engine import windows

    source, alert = build(CHAIN, cpu_in_payment(), history=3)
    incident, _ = windows(_Unreachable(source), alert, EngineConfig())  # type: ignore[arg-type]
    assert incident.start == source.time_range().start
    old = replace(alert, fired_at=source.time_range().start - 3600)  # older than what the source holds
    incident, _ = windows(source, old, EngineConfig())
    assert incident.start == source.time_range().start
