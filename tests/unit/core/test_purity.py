"""rca/core must stay pure: standard library and rca.core only, no I/O or clock reads."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[3] / "rca" / "core"
MODULES = sorted(CORE.glob("*.py"))
FORBIDDEN_CALLS = {"open", "print", "input", "exec", "eval"}
FORBIDDEN_MODULES = {"time", "datetime", "os", "socket", "subprocess", "random", "pathlib", "io", "logging"}


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_core_module_imports_only_stdlib_and_core(path):
    tree = ast.parse(path.read_text())
    for name in _imports(tree):
        top = name.split(".")[0]
        assert name.startswith("rca.core") or top in sys.stdlib_module_names, f"{path.name} imports {name}"
        assert top not in FORBIDDEN_MODULES, f"{path.name} imports {name} (I/O or clock)"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_core_module_calls_no_io_builtins(path):
    tree = ast.parse(path.read_text())
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not called & FORBIDDEN_CALLS


def test_every_expected_module_exists():
    expected = {"evidence", "redact", "verdict", "hypotheses", "gate", "grounding", "actions", "modes"}
    assert expected <= {p.stem for p in MODULES}
