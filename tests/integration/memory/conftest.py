"""Memory tests run on the session's local-mode Qdrant (a temp folder, see tests/conftest.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from rca.memory.embedding import Embedder, get_embedder
from rca.memory.index import IncidentMemory
from rca.memory.store import get_client


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The process-wide embedder, loaded once for the session."""
    e = get_embedder()
    e.load()
    return e


@pytest.fixture(params=["mirror", "qdrant-filter"])
def mem(request: pytest.FixtureRequest, embedder: Embedder) -> Iterator[IncidentMemory]:
    """A fresh collection in the session's local store, searched two ways: through the numpy mirror
    local mode uses, and through Qdrant's own Filter evaluation (what a Qdrant server runs)."""
    client = get_client()
    name = f"test_memory_{uuid.uuid4().hex[:12]}"
    memory = IncidentMemory(client, collection=name, embedder=embedder, local_index=request.param == "mirror")
    yield memory
    if client.collection_exists(name):
        client.delete_collection(name)
