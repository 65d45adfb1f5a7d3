"""The classifier against realistic outputs of Prometheus, Loki, Tempo/Jaeger, kubectl and GitHub."""

from __future__ import annotations

from collections import Counter

import pytest

from rca.core.evidence import Verdict
from rca.core.verdict import ToolOutput, classify
from tests.unit.core.verdict_corpus import CORPUS, Case


def _output(case: Case) -> ToolOutput:
    start, end = case.onset if case.onset else (None, None)
    return ToolOutput(
        case.text,
        case.signals,
        case.ok,
        case.error,
        case.backend_status,
        start,
        end,
        case.entities,
        case.structural,
    )


def test_corpus_size_and_mix():
    kinds = Counter(c.kind for c in CORPUS)
    tools = Counter(c.tool for c in CORPUS)
    assert len(CORPUS) >= 150
    assert set(kinds) == {"healthy", "faulty", "failed"}
    assert min(kinds.values()) >= 30
    assert {"prometheus", "loki", "tempo", "jaeger", "kubectl", "github"} <= set(tools)


def test_case_labels_are_consistent():
    for case in CORPUS:
        if case.kind == "healthy":
            assert case.expected is not Verdict.SUPPORTS
        elif case.kind == "failed":
            assert case.expected is Verdict.INCONCLUSIVE
        else:
            assert case.expected is Verdict.SUPPORTS


@pytest.mark.parametrize("case", CORPUS, ids=[f"{i:03d}-{c.tool}-{c.kind}" for i, c in enumerate(CORPUS)])
def test_corpus_case(case):
    assert classify(_output(case)) is case.expected


def test_no_healthy_or_failed_output_supports():
    wrong = [c.text for c in CORPUS if c.kind != "faulty" and classify(_output(c)) is Verdict.SUPPORTS]
    assert wrong == []
