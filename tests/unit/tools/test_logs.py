"""The logs tool: bursts, drain3 templates, new templates and the victim discount."""

from __future__ import annotations

from rca.core.hypotheses import Hypothesis
from rca.telemetry.model import LogRecord, Severity, TimeWindow
from rca.tools import logs
from tests.unit.tools import ONSET, FakeSource, context

EDGES = (("front", "order"), ("order", "pay"), ("front", "user"), ("order", "stock"))


def _line(t: float, entity: str, severity: Severity, text: str) -> LogRecord:
    clock = f"{int(t) // 60 % 24:02d}:{int(t) % 60:02d}:{int(t * 1000) % 60:02d}.{int(t * 1000) % 1000:03d}"
    return LogRecord(t, entity, severity, f"{clock} {severity.value} {text} TraceID: {int(t * 977):032x}")


def _source(with_fault: bool = True) -> FakeSource:
    records: list[LogRecord] = []
    for i in range(180):
        t = ONSET - 540.0 + i * 5.0  # steady traffic from 9 minutes before the onset to 6 after
        k = i % 7
        info = Severity.INFO
        records.append(_line(t, "order", info, f"o.OrderServiceImpl#41 [create][order created] id {k}"))
        records.append(_line(t + 0.1, "pay", info, f"p.PayServiceImpl#12 [pay][paid] amount {k * 3}"))
        records.append(_line(t + 0.2, "user", info, f"u.UserServiceImpl#7 [login][user ok] uid {k}"))
        records.append(_line(t + 0.3, "stock", info, f"s.StockServiceImpl#9 [take][taken] n {k}"))
        if with_fault and t >= ONSET:
            error = Severity.ERROR
            thrown = f"p.PayServiceImpl#30 [pay][NullPointerException in ledger] n {k}"
            records.append(_line(t + 0.15, "pay", error, thrown))
            failed = f"o.OrderServiceImpl#50 [create][call to pay failed: 500] id {k}"
            records.append(_line(t + 0.25, "order", error, failed))
    return FakeSource(EDGES, records=records)


def test_callee_throwing_errors_outranks_its_caller_that_logs_failed_calls() -> None:
    ctx = context(_source())
    scores = logs.entity_scores(ctx)
    assert max(scores, key=lambda e: scores[e]) == "pay"
    order = logs.log_profile(ctx, "order")
    assert order.blamed == "pay"
    assert order.own < order.raw
    assert scores["pay"] > scores["order"]
    assert scores["user"] < 3.0
    assert scores["stock"] < 3.0


def test_new_error_template_is_named() -> None:
    ctx = context(_source())
    prof = logs.log_profile(ctx, "pay")
    new = prof.new_templates
    assert len(new) == 1
    assert new[0].problem
    assert "NullPointerException" in new[0].template
    assert new[0].reference == 0
    assert new[0].observed > 0
    assert logs.kind_hint(ctx, "pay") is logs.FaultKind.ERRORS
    assert logs.kind_hint(ctx, "user") is None


def test_tool_result_carries_only_the_anomaly_score_and_no_raw_lines() -> None:
    ctx = context(_source())
    result = logs.LogsTool().run(ctx, Hypothesis(id="h1", entity="pay", fault_kind="errors"))
    assert set(result.signals) == {"anomaly_score"}
    assert result.signals["anomaly_score"] >= 0.8
    assert "new templates" in result.summary
    assert "TraceID" not in result.summary
    assert "\n" not in result.summary
    assert result.measurements["new_templates"] == 1
    healthy = logs.LogsTool().run(ctx, Hypothesis(id="h2", entity="user", fault_kind="errors"))
    assert set(healthy.signals) == {"anomaly_score"}
    assert healthy.signals["anomaly_score"] <= 0.2


def test_analysis_is_cached_per_investigation() -> None:
    ctx = context(_source())
    first = logs.analyse(ctx)
    assert logs.analyse(ctx) is first


def test_empty_baseline_falls_back_to_pre_onset_then_to_peers() -> None:
    src = _source()
    # Baseline holds nothing, the incident window holds data before the onset: pre-onset reference.
    empty = TimeWindow(ONSET - 5_000.0, ONSET - 4_000.0)
    ctx = context(src, incident=TimeWindow(ONSET - 300.0, ONSET + 300.0), baseline=empty)
    assert logs.analyse(ctx).comparison.mode is logs.Mode.PRE_ONSET
    result = logs.LogsTool().run(ctx, Hypothesis(id="h", entity="pay", fault_kind="errors"))
    assert "pre-onset" in result.summary
    # Nothing before the onset at all: the services are compared with each other, and it is said.
    ctx = context(src, incident=TimeWindow(ONSET, ONSET + 300.0), baseline=empty)
    analysis = logs.analyse(ctx)
    assert analysis.comparison.mode is logs.Mode.PEERS
    result = logs.LogsTool().run(ctx, Hypothesis(id="h", entity="pay", fault_kind="errors"))
    assert "other services" in result.summary
    assert set(result.signals) == {"anomaly_score"}


def test_no_logs_at_all_is_not_a_crash() -> None:
    ctx = context(FakeSource(EDGES))
    assert all(v == 0.0 for v in logs.entity_scores(ctx).values())
    result = logs.LogsTool().run(ctx, Hypothesis(id="h", entity="pay", fault_kind="errors"))
    assert "no log lines" in result.summary
    assert not result.signals


def test_masking_keeps_statement_ids_and_hides_values() -> None:
    import pandas as pd

    line = "12:01:02.003 ERROR a.Impl#37 550e8400-e29b-41d4-a716-446655440000 at 10.0.0.1 n=42 abcdef012345"
    masked = logs.mask(pd.Series([line]))[0]
    assert masked.startswith("<TS> ERROR a.Impl#37 <UUID> at <IP>")
    for token in ("<ID>", "<NUM>"):
        assert token in masked
    assert "42" not in masked
