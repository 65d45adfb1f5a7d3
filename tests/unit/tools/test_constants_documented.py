"""Every numeric constant of the engine has a documented origin in docs/constants.md (issue #20, §3).

Found by the syntax tree of every module in `rca/tools` and `rca/investigation`:

- module-level and class-level assignments (`NAME = ...`, `NAME: T = ...`) whose value holds a number
  literal (a bool is no number). A class-level default of exactly 0 is left out: it is an empty count or
  measure (`tokens_in: int = 0`), the additive identity, not a choice;
- magic numbers in comparisons: a number literal other than 0 and 1 (emptiness and identity) compared
  with anything inside a function, named by the function and the comparison (`deviation: base.size < 3`),
  so the key does not move with line numbers.

Each must have a row `| \\`path\\` | \\`name\\` | value | origin |` whose origin starts with one of
ORIGINS; a plain number's value cell must show its current value (re-tuning a constant means revisiting
its origin); and a row whose constant is gone fails too, so the document cannot go stale.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "constants.md"
PACKAGES = ("rca/tools", "rca/investigation")
ORIGINS = ("convention", "physical bound", "fitted", "hand-set")
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|([^|]*)\|(.*)\|\s*$")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Constant:
    """One numeric constant: where, its documented name and its value as written."""

    path: str
    name: str
    value: str
    plain: bool  # a bare number, whose value cell must match


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _assignments(body: list[ast.stmt]) -> Iterator[tuple[str, ast.expr]]:
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            yield stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            yield stmt.target.id, stmt.value


def constants_of(path: Path, rel: str) -> Iterator[Constant]:
    """The numeric constants and magic comparisons of one module."""
    tree = ast.parse(path.read_text())
    scopes: list[tuple[str, list[ast.stmt]]] = [("", tree.body)]
    scopes += [(f"{node.name}.", node.body) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    for prefix, body in scopes:
        for name, value in _assignments(body):
            if not any(_is_number(n) for n in ast.walk(value)):
                continue
            if prefix and _is_number(value) and ast.literal_eval(value) == 0:
                continue  # an empty count or measure
            yield Constant(rel, prefix + name, ast.unparse(value), _is_number(value))
    for function in (n for n in ast.walk(tree) if isinstance(n, _FUNCTIONS)):
        for node in ast.walk(function):
            if not isinstance(node, ast.Compare):
                continue
            numbers = [n for n in (node.left, *node.comparators) if _is_number(n)]
            if any(ast.literal_eval(n) not in (0, 1) for n in numbers):
                yield Constant(rel, f"{function.name}: {ast.unparse(node)}", "", False)


def engine_constants(root: Path = REPO) -> list[Constant]:
    """Every numeric constant of the engine packages under `root`, in file order."""
    found: list[Constant] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            found.extend(constants_of(path, path.relative_to(root).as_posix()))
    return list(dict.fromkeys(found))  # a comparison written twice in one function is one entry


def documented(text: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(path, name) -> (value cell, origin cell) of every table row of the document."""
    rows = {}
    for line in text.splitlines():
        match = _ROW.match(line.strip())
        if match:
            rows[(match.group(1), match.group(2))] = (match.group(3).strip(), match.group(4).strip())
    return rows


def problems(constants: list[Constant], rows: dict[tuple[str, str], tuple[str, str]]) -> list[str]:
    """What is wrong between the code's constants and the document's rows, one line each."""
    found = []
    for c in constants:
        row = rows.get((c.path, c.name))
        if row is None:
            found.append(
                f"{c.path}: `{c.name}`{' = ' + c.value if c.value else ''} is not in docs/constants.md; add "
                f"| `{c.path}` | `{c.name}` | {c.value if c.plain else ''} | <{' / '.join(ORIGINS)}: why> |"
            )
            continue
        value, origin = row
        if not origin.lstrip("*_ ").lower().startswith(ORIGINS):
            found.append(f"{c.path}: `{c.name}`: origin {origin!r} does not start with one of {ORIGINS}")
        if c.plain and value != c.value:
            found.append(f"{c.path}: `{c.name}` is {c.value} in the code but {value} in docs/constants.md")
    keys = {(c.path, c.name) for c in constants}
    stale = [(p, n) for p, n in rows if (p, n) not in keys]
    found += [f"docs/constants.md: `{n}` of {p} is no longer in the code" for p, n in stale]
    return found


def test_every_engine_constant_has_a_documented_origin():
    found = problems(engine_constants(), documented(DOC.read_text()))
    assert found == [], "\n".join(found)


def test_the_scan_finds_constants_comparisons_and_stale_rows(tmp_path):
    module = tmp_path / "rca" / "tools" / "x.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "LIMIT = 5\n"
        "FLAG = True\n"
        "NAME = 'a'\n"
        "class C:\n"
        "    count: int = 0\n"
        "    weight: float = 1.5\n"
        "def f(v):\n"
        "    return v.size < 3 and v.size > 0\n"
    )
    constants = engine_constants(tmp_path)
    assert [c.name for c in constants] == ["LIMIT", "C.weight", "f: v.size < 3"]
    rows = documented(
        "| `rca/tools/x.py` | `LIMIT` | 4 | convention: five of them |\n"
        "| `rca/tools/x.py` | `C.weight` | 1.5 | a guess |\n"
        "| `rca/tools/x.py` | `GONE` | 1 | convention |\n"
    )
    assert problems(constants, rows) == [
        "rca/tools/x.py: `LIMIT` is 5 in the code but 4 in docs/constants.md",
        "rca/tools/x.py: `C.weight`: origin 'a guess' does not start with one of "
        "('convention', 'physical bound', 'fitted', 'hand-set')",
        "rca/tools/x.py: `f: v.size < 3` is not in docs/constants.md; add "
        "| `rca/tools/x.py` | `f: v.size < 3` |  | <convention / physical bound / fitted / hand-set: why> |",
        "docs/constants.md: `GONE` of rca/tools/x.py is no longer in the code",
    ]
