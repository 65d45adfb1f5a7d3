"""The regression gate: the engine on a fixed subset of dev cases against the committed baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rca.evaluation.regression import BASELINE, MAX_AC1_DROP, compare, evaluate_subset

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def test_no_regression_on_the_dev_subset() -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    verdict = compare(json.loads(BASELINE.read_text()), evaluate_subset(DATA))
    assert verdict.ok, "\n".join(verdict.failures)


BASE = {
    "ac1": {"a/A": 0.8},
    "cases": {"c1": {"rank": 1, "confident_correct": True}, "c2": {"rank": 2, "confident_correct": False}},
}


def test_small_ac1_drop_is_tolerated() -> None:
    now = {"ac1": {"a/A": 0.8 - MAX_AC1_DROP}, "cases": BASE["cases"]}
    assert compare(BASE, now).ok


def test_larger_ac1_drop_fails() -> None:
    now = {"ac1": {"a/A": 0.7}, "cases": BASE["cases"]}
    assert compare(BASE, now).failures == ("a/A: AC@1 fell from 0.800 to 0.700",)


def test_losing_a_confident_correct_case_fails() -> None:
    now = {"ac1": {"a/A": 0.9}, "cases": {"c1": {"rank": 1, "confident_correct": False}}}
    assert compare(BASE, now).failures == ("c1: was confident and correct, is not any more",)


def test_a_dataset_that_disappears_fails() -> None:
    assert not compare(BASE, {"ac1": {}, "cases": BASE["cases"]}).ok
