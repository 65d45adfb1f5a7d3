"""The one error incident memory's callers need to know: memory is unavailable, carry on without it."""

from __future__ import annotations


class MemoryUnavailable(RuntimeError):
    """Incident memory can't be used right now: the vector store can't be opened or reached (another
    process holds a local-mode folder, the server is down) or the embedding model isn't installed.

    Callers degrade to no recall (and no indexing, retried later) with a warning; nothing depends on it.
    """
