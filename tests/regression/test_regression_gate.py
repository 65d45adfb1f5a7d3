"""The regression gate: every dev case and a fixed-seed synthetic suite against per-dataset floors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rca.evaluation.regression import BASELINE, MAX_DROP, compare, floors, snapshot
from rca.evaluation.scoring import CaseRow

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.mark.slow
def test_no_dataset_falls_below_its_floor() -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    current = snapshot(DATA)
    # Its duration is printed, not asserted: time belongs to benchmarks on this shared machine.
    print(f"regression gate: {current['seconds']} s")
    baseline = json.loads(BASELINE.read_text())
    assert set(current["floors"]) == set(baseline["floors"]), "the gate's datasets changed: rewrite it"
    verdict = compare(baseline, current)
    assert verdict.ok, "\n".join(verdict.failures)


BASE = {
    "floors": {
        "dev:a/A": {"cases": 10, "ac1": 0.8, "ac3": 0.9, "confident_precision": 1.0},
        "synthetic:a/A": {"cases": 5, "ac1": 0.6, "ac3": 0.8, "confident_precision": None},
    }
}


def _now(**changes: float | None) -> dict:
    floors = {k: dict(v) for k, v in BASE["floors"].items()}
    floors["dev:a/A"].update(changes)
    return {"floors": floors}


def test_a_drop_within_the_tolerance_passes() -> None:
    assert compare(BASE, _now(ac1=0.8 - MAX_DROP, ac3=0.9 - MAX_DROP, confident_precision=0.985)).ok


@pytest.mark.parametrize("metric", ["ac1", "ac3", "confident_precision"])
def test_a_larger_drop_of_any_floor_fails(metric: str) -> None:
    before = BASE["floors"]["dev:a/A"][metric]
    verdict = compare(BASE, _now(**{metric: before - 0.05}))
    assert verdict.failures == (f"dev:a/A: {metric} fell from {before:.3f} to {before - 0.05:.3f}",)


def test_an_undefined_precision_is_not_compared() -> None:
    assert compare(BASE, _now(confident_precision=None)).ok


def test_a_dataset_that_disappears_fails() -> None:
    current = _now()
    del current["floors"]["synthetic:a/A"]
    assert compare(BASE, current).failures == ("synthetic:a/A: no longer evaluated",)


def _row(key: str, *, correct: bool, confident: bool) -> CaseRow:
    dataset, _, system = key.partition("/")
    return CaseRow(
        dataset=dataset,
        system=system,
        case_id="c",
        truth="x",
        truth_kind=None,
        top5=("x",) if correct else ("y", "z", "x"),
        predicted_kind=None,
        exit="confident" if confident else "no_confident_root_cause",
        tier="notify",
        capped_confidence=0.0,
        seconds=0.0,
    )


def test_floors_are_shares_per_dataset() -> None:
    rows = [
        _row("a/A", correct=True, confident=True),
        _row("a/A", correct=False, confident=True),
        _row("a/A", correct=False, confident=False),
        _row("b/B", correct=True, confident=False),
    ]
    got = floors(rows, "dev")
    assert got["dev:a/A"] == {"cases": 3, "ac1": 0.3333, "ac3": 1.0, "confident_precision": 0.5}
    assert got["dev:b/B"]["confident_precision"] is None
