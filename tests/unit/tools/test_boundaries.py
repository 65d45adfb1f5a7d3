"""The analysis wing's boundaries: the investigation reaches the tools only through their public
surface, no tool imports another tool's package or the investigation, and every registered tool is a
package that declares itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rca.tools.base import ToolSpec
from rca.tools.registry import PACKAGES, SPECS

RCA = Path(__file__).resolve().parents[3] / "rca"
# What the investigation may import from the tools (see rca/tools/__init__.py).
PUBLIC = {"rca.tools.base", "rca.tools.registry", "rca.tools.facts", "rca.tools.faults", "rca.tools.graph"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names if node.module == "rca.tools")
    return names


@pytest.mark.parametrize("path", sorted((RCA / "investigation").glob("*.py")), ids=lambda p: p.name)
def test_the_investigation_reaches_the_tools_only_through_their_public_surface(path: Path) -> None:
    reached = {name for name in _imports(path) if name.startswith("rca.tools")}
    assert reached <= PUBLIC, f"{path.name} imports {sorted(reached - PUBLIC)}"


@pytest.mark.parametrize("path", sorted((RCA / "tools").rglob("*.py")), ids=lambda p: str(p.relative_to(RCA)))
def test_a_tool_imports_no_other_tool_and_never_the_investigation(path: Path) -> None:
    own = path.relative_to(RCA / "tools").parts[0] if path.parent != RCA / "tools" else None
    for name in _imports(path):
        assert not name.startswith("rca.investigation"), f"{path} imports {name}"
        parts = name.split(".")
        if name.startswith("rca.tools.") and len(parts) > 2 and parts[2] in PACKAGES:
            assert parts[2] == own, f"{path} imports another tool's package: {name}"


def test_every_registered_tool_is_a_package_that_declares_itself() -> None:
    assert [s.name for s in SPECS] == list(PACKAGES)
    for spec in SPECS:
        assert isinstance(spec, ToolSpec)
        assert (RCA / "tools" / spec.name / "__init__.py").exists()
        tool = spec.make()
        assert (tool.name, tool.source) == (spec.name, spec.source)
