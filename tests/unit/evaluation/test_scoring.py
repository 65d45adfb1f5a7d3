"""Scoring: detail accuracy where a dataset labels the detail, and the anchors of unconcluded runs."""

from __future__ import annotations

import pytest

from rca.evaluation.scoring import CaseRow, detail_correct, score


@pytest.mark.parametrize(
    ("dataset", "truth", "label", "top", "detail", "expected"),
    [
        (
            "nezha",
            "ts-basic-service",
            "ts-basic-service-5dc8-46997",
            "ts-basic-service",
            "instance:ts-basic-service-5dc8-46997",
            True,
        ),
        ("nezha", "ts-basic-service", "ts-basic-service-5dc8-46997", "ts-basic-service", "metric:cpu", False),
        ("nezha", "ts-basic-service", "ts-basic-service-5dc8-46997", "ts-basic-service", "", False),
        (
            "changerca-ob",
            "adservice",
            "defective release among: adservice, cartservice",
            "adservice",
            "change:v2-abc",
            True,
        ),
        # the right kind of detail on the wrong service, or a pod where the release was asked for
        (
            "changerca-ob",
            "adservice",
            "defective release among: adservice,cartservice",
            "cartservice",
            "change:v2-abc",
            False,
        ),
        (
            "changerca-ob",
            "adservice",
            "defective release among: adservice,cartservice",
            "adservice",
            "instance:adservice-1",
            False,
        ),
        (
            "changerca-ob",
            "emailservice",
            "defective release among: adservice,cartservice",
            "emailservice",
            "change:v2-abc",
            False,
        ),
        ("rcd-sockshop", "carts", "", "carts", "metric:cpu", None),
        ("nezha", "ts-basic-service", "", "ts-basic-service", "instance:x", None),
    ],
)
def test_detail_correct(
    dataset: str, truth: str, label: str, top: str, detail: str, expected: bool | None
) -> None:
    assert detail_correct(dataset, truth, label, top, detail) is expected


def _row(case: str, exit_: str, detail_ok: bool | None, anchor: str = "", steps: int = 0) -> CaseRow:
    return CaseRow(
        "nezha",
        "TrainTicket",
        case,
        "a",
        "cpu",
        ("a",),
        "cpu",
        exit_,
        "notify",
        0.0,
        1.0,
        detail_ok=detail_ok,
        anchor=anchor,
        guidance_steps=steps,
    )


def test_scorecard_reports_detail_accuracy_and_the_anchors_of_unconcluded_runs() -> None:
    rows = [
        _row("1", "confident", True),
        _row("2", "confident", False),
        _row("3", "no_confident_root_cause", None, "conflicting_evidence", 2),
        _row("4", "no_confident_root_cause", False, "conflicting_evidence", 1),
        _row("5", "no_confident_root_cause", False, "no_anomaly", 0),
    ]
    entry = score(rows)
    assert entry["detail_accuracy"] == 0.25
    assert entry["anchors"] == {"conflicting_evidence": 2, "no_anomaly": 1}
    assert entry["unconcluded_with_steps"] == 2
    assert score([_row("1", "confident", None)])["detail_accuracy"] is None
