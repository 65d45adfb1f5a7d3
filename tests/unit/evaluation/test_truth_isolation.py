"""Ground truth is read by evaluation code only, and only after the engine has answered."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rca.evaluation import runner

REPO = Path(__file__).resolve().parents[3]
DATA = REPO.parent / "shared" / "data"
ENGINE_PACKAGES = ("rca/core", "rca/telemetry", "rca/tools", "rca/investigation")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", ENGINE_PACKAGES)
def test_engine_code_never_imports_evaluation(package: str) -> None:
    offenders = [
        str(p.relative_to(REPO))
        for p in (REPO / package).rglob("*.py")
        if any(name.startswith("rca.evaluation") for name in _imports(p))
    ]
    assert offenders == []


def test_truth_is_read_after_the_engine_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    calls: list[str] = []
    real_investigate, real_truth = runner.investigate, runner.ground_truth

    def investigate(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append("investigate")
        return real_investigate(*args, **kwargs)

    def truth(*args, **kwargs):  # type: ignore[no-untyped-def]
        assert calls == ["investigate"], "ground truth read before the engine answered"
        calls.append("truth")
        return real_truth(*args, **kwargs)

    monkeypatch.setattr(runner, "investigate", investigate)
    monkeypatch.setattr(runner, "ground_truth", truth)
    ref = runner.Selection(DATA, "dev", ("rcd-sockshop",), limit=1).refs()[0]
    row = runner.evaluate_case(DATA, ref, runner.EngineConfig())
    assert calls == ["investigate", "truth"]
    assert row.truth


def test_engine_facing_case_holds_no_answer() -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    from rca.evaluation.ground_truth import ground_truth
    from rca.telemetry.cases import load_case

    ref = runner.Selection(DATA, "dev", ("changerca-ob",), limit=1).refs()[0]
    truth = ground_truth(DATA, ref)
    case = load_case(DATA, ref)
    engine_facing = repr(case.ref) + repr(case.alert) + repr(case.source.events(case.source.time_range()))
    assert truth.fault_type not in engine_facing
    assert "fault_release_service" not in engine_facing
