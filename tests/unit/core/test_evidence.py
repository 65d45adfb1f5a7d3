from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from rca.core.evidence import STRUCTURAL_SOURCES, Evidence, EvidenceSink, Source, Verdict
from rca.core.hypotheses import HypothesisState, derive_state
from tests.unit.core.factories import ev


def test_source_and_verdict_values_are_the_contract():
    assert [s.value for s in Source] == [
        "metrics",
        "logs",
        "traces",
        "events",
        "changes",
        "topology",
        "synthetic",
        "llm_inferred",
    ]
    assert [v.value for v in Verdict] == ["supports", "refutes", "inconclusive"]


@pytest.mark.parametrize("source", list(Source))
def test_is_hard_exactly_when_not_llm_inferred(source):
    item = ev(source=source)
    assert item.is_hard is (source is not Source.LLM_INFERRED)
    # A structural lane (topology) is hard evidence but never validates by itself.
    assert item.validates is (source is not Source.LLM_INFERRED and source not in STRUCTURAL_SOURCES)


def test_topology_support_alone_never_validates():
    assert derive_state([ev(source=Source.TOPOLOGY)]) is HypothesisState.INCONCLUSIVE
    assert derive_state([ev(source=Source.TOPOLOGY), ev(source=Source.METRICS)]) is HypothesisState.VALIDATED


@pytest.mark.parametrize("verdict", [Verdict.REFUTES, Verdict.INCONCLUSIVE])
def test_only_supports_validates(verdict):
    assert not ev(verdict=verdict).validates


def test_evidence_is_immutable_and_signals_read_only():
    raw = {"error_rate": 0.37}
    item = Evidence("t", "h1", "s", Verdict.SUPPORTS, Source.METRICS, 1, raw)
    raw["error_rate"] = 0.0  # the record took a copy
    assert item.signals == {"error_rate": 0.37}
    assert isinstance(item.signals, MappingProxyType)
    with pytest.raises(TypeError):
        item.signals["x"] = 1  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.summary = "changed"  # type: ignore[misc]
    assert isinstance(item.observed_at, float)
    assert hash(item) == hash(Evidence("t", "h1", "s", Verdict.SUPPORTS, Source.METRICS, 1.0, {"a": 1}))


def test_string_values_are_coerced_to_enums_and_bad_ones_rejected():
    item = Evidence("t", "h1", "s", "supports", "logs", 0)  # type: ignore[arg-type]
    assert item.verdict is Verdict.SUPPORTS
    assert item.source is Source.LOGS
    with pytest.raises(ValueError):
        Evidence("t", "h1", "s", "proven", "logs", 0)  # type: ignore[arg-type]


def test_summary_is_redacted_one_line_and_bounded():
    item = ev(
        summary="login failed for bob@example.com\nfrom 10.1.2.3 pod auth-6b7c9d8f5b-rx9t2 " + "x" * 400
    )
    assert "\n" not in item.summary
    assert len(item.summary) <= 280
    assert "bob@example.com" not in item.summary
    assert "10.1.2.3" not in item.summary
    assert "auth-6b7c9d8f5b-rx9t2" not in item.summary
    assert item.summary.startswith("login failed for <email> from <ip> pod <pod>")


def test_sink_refuses_llm_inferred_and_keeps_order():
    sink = EvidenceSink()
    assert sink.record(ev(source=Source.LLM_INFERRED)) is False
    assert len(sink) == 0
    assert sink.all() == ()
    first, second, other = ev(at=1), ev(at=2), ev(hypothesis_id="h2")
    assert all(sink.record(e) for e in (first, other, second))
    assert sink.evidence_for("h1") == (first, second)
    assert sink.evidence_for("h2") == (other,)
    assert sink.evidence_for("missing") == ()
    assert sink.all() == (first, other, second)
    assert len(sink) == 3
