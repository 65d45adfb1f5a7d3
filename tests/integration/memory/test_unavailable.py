"""A local-mode store held by another process: memory says MemoryUnavailable, so callers can degrade."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from rca.memory import index
from rca.memory.documents import IncidentDocument
from rca.memory.errors import MemoryUnavailable
from rca.memory.store import close_client
from tests.conftest import REPO_ROOT
from tests.integration.memory.factories import ONSET

pytestmark = [pytest.mark.integration]

OPEN_VIA_MEMORY = textwrap.dedent(
    """
    import django
    django.setup()
    from rca.memory.index import MemoryUnavailable, memory
    try:
        memory().count()
    except MemoryUnavailable as exc:
        print("UNAVAILABLE", exc)
    else:
        print("OPENED")
    """
)

HOLD_STORE = textwrap.dedent(
    """
    import sys
    from qdrant_client import QdrantClient
    client = QdrantClient(path=sys.argv[1])
    print("HOLDING", flush=True)
    sys.stdin.readline()
    client.close()
    """
)


def child_env(qdrant_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "QDRANT_URL"}
    env.update(DJANGO_SETTINGS_MODULE="rca.settings", QDRANT_PATH=str(qdrant_path))
    return env


def test_a_second_process_on_a_held_store_gets_memory_unavailable() -> None:
    index.memory().count()  # this process opens and holds the session's store
    proc = subprocess.run(
        [sys.executable, "-c", OPEN_VIA_MEMORY],
        cwd=REPO_ROOT,
        env=child_env(settings.ROOTLINE_QDRANT_PATH),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("UNAVAILABLE"), proc.stdout + proc.stderr[-3000:]
    assert "already accessed by another instance" in proc.stdout


@pytest.fixture
def store_held_elsewhere(tmp_path: Path) -> Iterator[Path]:
    """A store folder another process holds; this process's memory is pointed at it for the test."""
    path = tmp_path / "held"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_STORE, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    original = settings.ROOTLINE_QDRANT_PATH
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "HOLDING"
        close_client()
        settings.ROOTLINE_QDRANT_PATH = path
        yield path
    finally:
        settings.ROOTLINE_QDRANT_PATH = original
        close_client()
        if holder.stdin is not None:
            holder.stdin.close()
        holder.wait(timeout=30)


def test_this_process_gets_memory_unavailable_and_can_degrade(store_held_elsewhere: Path) -> None:
    doc = IncidentDocument(
        incident_id=1,
        title="checkout slow",
        symptom_entity="checkout",
        services=("checkout",),
        root_cause_entity="",
        fault_kind="",
        tier="",
        exit="",
        evidence=(),
        onset=ONSET,
    )
    with pytest.raises(MemoryUnavailable, match="already accessed"):
        index.memory()
    for call in (
        lambda: index.search("checkout"),
        lambda: index.recall("checkout slow", symptom="checkout"),
        lambda: index.upsert(doc),
        lambda: index.delete(1),
    ):
        with pytest.raises(MemoryUnavailable):
            call()

    # What a caller does: no recall, a warning, carry on.
    try:
        priors = index.recall("checkout slow", symptom="checkout")
    except MemoryUnavailable:
        priors = {}
    assert priors == {}


def test_memory_comes_back_once_the_other_process_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "released"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_STORE, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    original = settings.ROOTLINE_QDRANT_PATH
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "HOLDING"
        close_client()
        settings.ROOTLINE_QDRANT_PATH = path
        with pytest.raises(MemoryUnavailable):
            index.memory()
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        assert index.memory().count() == 0  # nothing was cached from the failed attempt
    finally:
        settings.ROOTLINE_QDRANT_PATH = original
        close_client()
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
