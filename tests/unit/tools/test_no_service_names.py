"""No rule in the engine names a service (issue #20, section 1).

The names come from the data, not from a list written here: every `root_cause_service` of the public
index, and every entity of each system's topology and metric columns (one case per dataset and system,
through the project's own loaders). A name also counts by its service part, the text before its first
`_` (PetShop's `PetSearch_AWS::ECS::Fargate` is the `PetSearch` service).

Two kinds of name, decided by the name's own shape, never by where it was found:

- A *distinctive* name (anything but a plain lowercase word: `ts-order-service`, `carts-db`,
  `PetSearch`) may appear nowhere in `rca/tools` or
  `rca/investigation`: code, strings, comments and docstrings alike (word-boundary match).
- A *generic* name is a plain lowercase word (`user`, `orders`, `payment`, `frontend`, `invalid`,
  `lambda`; also `adservice`, which is no English word but has the same shape and gets the same
  check). Such a word is ordinary English and ordinary Python (`np.errstate(invalid=...)`, "the
  user"), so prose and identifiers say nothing about a rule. What a rule naming a service needs is the
  name as *data*: a string literal. So a generic name may appear in no string literal other than a
  docstring (word-boundary match inside the literal). One structural exception, with its reason: the
  value of a `"role"` key, the Anthropic Messages API's speaker field, whose vocabulary (`"user"`,
  `"assistant"`) is the protocol's, not a system's.
"""

from __future__ import annotations

import ast
import csv
import os
import re
from collections.abc import Iterator
from pathlib import Path

from rca.telemetry.cases import load_case, read_index

REPO = Path(__file__).resolve().parents[3]
DATA_DIR = Path(os.environ.get("ROOTLINE_DATA_DIR", REPO.parent / "shared" / "data")).resolve()
ENGINE = ("rca/tools", "rca/investigation")
GENERIC = re.compile(r"[a-z]+")  # a plain lowercase word
PROTOCOL_KEYS = frozenset({"role"})  # the Messages API speaker field: its values are protocol words


def service_names() -> set[str]:
    """Every service name of every system in the data, with each name's service part."""
    index = DATA_DIR / "cases_index.csv"
    assert index.exists(), f"public data not found at {DATA_DIR} (set ROOTLINE_DATA_DIR)"
    with index.open(newline="") as handle:
        names = {row["root_cause_service"] for row in csv.DictReader(handle)}
    first = {}
    for ref in read_index(DATA_DIR):
        first.setdefault((ref.dataset, ref.system), ref)
    for ref in first.values():
        source = load_case(DATA_DIR, ref).source
        names |= set(source.topology().names()) | set(source.metric_entities())
    names |= {name.split("_", 1)[0] for name in names}
    return {name.strip() for name in names if name.strip()}


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _protocol_values(tree: ast.AST) -> set[int]:
    """ids of the string constants that are the values of a protocol key (`{"role": "user"}`)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in PROTOCOL_KEYS:
                    found.add(id(value))
    return found


def _literals(tree: ast.AST) -> Iterator[ast.Constant]:
    skip = _docstrings(tree) | _protocol_values(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node


def hits(names: set[str], root: Path = REPO) -> list[str]:
    """`file:line: name` for every place the engine (under `root`) names a service."""
    distinctive = {n: _word(n) for n in names if not GENERIC.fullmatch(n)}
    generic = {n: _word(n) for n in names if GENERIC.fullmatch(n)}
    found = []
    for package in ENGINE:
        for path in sorted((root / package).rglob("*.py")):
            text = path.read_text()
            rel = path.relative_to(root)
            for name, pattern in distinctive.items():
                for match in pattern.finditer(text):
                    found.append(f"{rel}:{text.count(chr(10), 0, match.start()) + 1}: {name}")
            for node in _literals(ast.parse(text)):
                for name, pattern in generic.items():
                    if pattern.search(str(node.value)):
                        found.append(f"{rel}:{node.lineno}: {name!r} in a string literal")
    return found


def test_names_come_from_every_system():
    names = service_names()
    # One root cause of each system is among them (read from the data, so the check cannot go stale).
    with (DATA_DIR / "cases_index.csv").open(newline="") as handle:
        systems = {row["system"]: row["root_cause_service"] for row in csv.DictReader(handle)}
    assert set(systems.values()) <= names
    assert any(not GENERIC.fullmatch(n) for n in names)
    assert any(GENERIC.fullmatch(n) for n in names)


def test_the_check_finds_a_name(tmp_path):
    module = tmp_path / "rca" / "tools" / "rule.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        '"""The user asks; the ts-order-service docstring counts."""\n'
        "# a comment naming carts-db counts too\n"
        'MESSAGE = {"role": "user"}\n'
        "user = 1  # an identifier that is a generic word is no rule\n"
        'SUSPECT = "user"\n'
        'OTHER = "ts-user-service is not user-db"\n'
    )
    found = hits({"ts-order-service", "carts-db", "user", "ts-user", "user-db"}, root=tmp_path)
    assert sorted(found) == [
        "rca/tools/rule.py:1: ts-order-service",
        "rca/tools/rule.py:2: carts-db",
        "rca/tools/rule.py:5: 'user' in a string literal",
        "rca/tools/rule.py:6: user-db",
    ]


def test_engine_names_no_service():
    found = hits(service_names())
    assert found == [], "the engine names a service of the data:\n" + "\n".join(found)
