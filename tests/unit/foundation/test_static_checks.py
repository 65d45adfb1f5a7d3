"""ruff, mypy and the import contracts run as part of the suite (mypy is strict on rca/core)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_ruff_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_mypy_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "rca", "frontend", "graphstore", "celery_app", "manage.py", "dev.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


@pytest.mark.slow
def test_import_contracts_hold() -> None:
    """The layering of pyproject.toml's [tool.importlinter] contracts (core pure, no cycles, ...)."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
