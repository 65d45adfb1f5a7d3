"""Incident memory reached through the memory worker (rca.memory.remote) when no worker answers.

The path with a worker that answers runs in tests/integration/pipeline/test_pipeline.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import Client

from rca.memory import index
from rca.memory.errors import MemoryUnavailable
from tests.integration.memory.factories import make_incident

pytestmark = [pytest.mark.integration]


@pytest.fixture
def no_memory_worker() -> Iterator[None]:
    """This process is told to use the memory worker, and none consumes the queue."""
    saved = (settings.ROOTLINE_MEMORY_VIA_WORKER, settings.ROOTLINE_MEMORY_TIMEOUT_S)
    settings.ROOTLINE_MEMORY_VIA_WORKER = True
    settings.ROOTLINE_MEMORY_TIMEOUT_S = 1
    yield
    settings.ROOTLINE_MEMORY_VIA_WORKER, settings.ROOTLINE_MEMORY_TIMEOUT_S = saved


def test_search_without_a_memory_worker_is_unavailable_and_names_the_queue(no_memory_worker: None) -> None:
    with pytest.raises(MemoryUnavailable, match="'memory' queue"):
        index.search("checkout is slow")
    with pytest.raises(MemoryUnavailable, match="did not answer within 1s"):
        index.recall("checkout is slow", symptom="checkout")


@pytest.mark.django_db
def test_an_investigation_goes_on_without_recall_and_says_why(no_memory_worker: None) -> None:
    incident, _ = make_incident("checkout latency is high", symptom="checkout", confident=False)
    priors, note = index.recall_for(incident)
    assert priors == {}
    assert note.startswith("no recall: incident memory did not answer")


@pytest.mark.django_db
def test_health_names_the_vector_store_when_the_memory_worker_is_away(no_memory_worker: None) -> None:
    response = Client().get("/healthz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["vector_store"]["status"] == "down"
    assert "'memory' queue" in checks["vector_store"]["detail"]
    assert checks["database"]["status"] == "ok"
