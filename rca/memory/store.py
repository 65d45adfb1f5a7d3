"""The Qdrant client for incident memory: a server when QDRANT_URL is set, else local mode."""

from __future__ import annotations

import atexit
import threading

from qdrant_client import QdrantClient

_lock = threading.Lock()
_client: QdrantClient | None = None


def get_client() -> QdrantClient:
    """The process-wide Qdrant client.

    Local mode keeps the store in a folder that only one process may open at a time (Qdrant's own
    rule); the caller sees the RuntimeError Qdrant raises when another process holds it.
    """
    global _client
    with _lock:
        if _client is None:
            from django.conf import settings

            if settings.ROOTLINE_QDRANT_URL:
                _client = QdrantClient(url=settings.ROOTLINE_QDRANT_URL, timeout=5)
            else:
                settings.ROOTLINE_QDRANT_PATH.mkdir(parents=True, exist_ok=True)
                _client = QdrantClient(path=str(settings.ROOTLINE_QDRANT_PATH))
            # Close before interpreter teardown; local mode's own finaliser fails that late.
            atexit.register(close_client)
        return _client


def close_client() -> None:
    """Release the store (tests, shutdown)."""
    global _client
    with _lock:
        if _client is not None:
            _client.close()
            _client = None
