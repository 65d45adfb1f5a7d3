"""Incident memory in Qdrant: the collection, idempotent upsert and delete, filtered search, and recall.

Collection `incident_memory`: one point per incident, id = UUID5 of the incident id (so re-indexing an
incident replaces its point), one unnamed 384-d cosine vector (`rca.memory.embedding`), and this payload
(built by `IncidentDocument.payload`):

    incident_id        int           the Incident row's id
    investigation_id   int | null    the Investigation the document was built from
    title              str
    symptom_entity     str           service.name of the alerting symptom
    services           list[str]     services involved (root cause, propagation path, symptom)
    root_cause_entity  str           "" unless the gate exited confident
    fault_kind         str           e.g. "cpu_saturation"; "" when unknown
    tier               str           notify | issue | patch | pull_request
    exit               str           confident | no_confident_root_cause | ""
    evidence           list[str]     up to five key evidence summaries (already redacted)
    onset              str           ISO-8601, UTC
    onset_ts           float         onset as epoch seconds (what time-range filters compare)
    text               str           the exact text that was embedded
    embedding_model    str           which model made the vector

Keyword indexes on services / symptom_entity / fault_kind / tier / exit and a float index on onset_ts
are created on a Qdrant server. Local mode ignores payload indexes (and warns) and evaluates filters point
by point in Python, too slow for 10,000 incidents; there `rca.memory.local_index` (a numpy mirror, sound
because only one process may open a local store) picks the hits and Qdrant supplies their payloads.

Recall is for seeding only: `recall` returns a prior per service and nothing else. It never produces
evidence, never touches a hypothesis, and a past incident can never validate anything in a new one.

When the store can't be opened or reached (another process holds a local-mode folder; the server is
down), every call raises `MemoryUnavailable`, so callers can carry on without memory and log a warning.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from qdrant_client import models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from rca.memory import remote
from rca.memory.documents import IncidentDocument
from rca.memory.embedding import DIMENSION, MODEL_ID, Embedder, get_embedder
from rca.memory.errors import MemoryUnavailable
from rca.memory.filters import SearchFilters
from rca.memory.local_index import LocalIndex

__all__ = [
    "COLLECTION",
    "Hit",
    "IncidentMemory",
    "MemoryUnavailable",
    "SearchFilters",
    "delete",
    "index_incident",
    "memory",
    "point_id",
    "recall",
    "recall_for",
    "search",
    "status",
    "upsert",
]

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

    from rca.incidents.models import Incident

log = logging.getLogger(__name__)

COLLECTION = "incident_memory"
# Point ids are UUID5s in this namespace of the incident id: stable across processes and re-indexing.
POINT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://rootline.invalid/incident-memory")
KEYWORD_FIELDS = ("services", "symptom_entity", "fault_kind", "tier", "exit")

# Recall: hits below this cosine similarity say nothing; above it the prior rises linearly to 1.
RECALL_MIN_SIMILARITY = 0.35
# A past incident with a different symptom counts for less than one that alerted on the same service.
RECALL_OTHER_SYMPTOM_WEIGHT = 0.7
RECALL_DEFAULT_LIMIT = 5
# Search and similar-incident hits below this cosine similarity are not shown: measured by
# bench/relevance_floor.py (documents in IncidentDocument.text form over five services x five fault
# kinds; 45 seeded gibberish queries scored at most 0.21, 12 responder queries at least 0.39 with this
# embedder), the midpoint 0.30. Gibberish then finds no similar incident rather than every incident.
SEARCH_MIN_SIMILARITY = 0.30


@dataclass(frozen=True)
class Hit:
    """One search result: a past incident and its cosine similarity to the query."""

    incident_id: int
    score: float
    document: IncidentDocument

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (an answer from the memory worker)."""
        return {"score": self.score, "payload": self.document.payload()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hit:
        """The inverse of `to_dict`."""
        document = IncidentDocument.from_payload(data["payload"])
        return cls(incident_id=document.incident_id, score=float(data["score"]), document=document)


def is_local(client: QdrantClient) -> bool:
    """Whether `client` runs Qdrant in this process (local mode: a folder or `:memory:`)."""
    options = getattr(client, "init_options", {}) or {}
    return bool(options.get("path")) or options.get("location") == ":memory:"


def point_id(incident_id: int) -> str:
    """The point id of an incident: UUID5, so the same incident always maps to the same point."""
    return str(uuid.uuid5(POINT_NAMESPACE, str(int(incident_id))))


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """Store failures become MemoryUnavailable; anything else (a bug) propagates as it is."""
    try:
        yield
    except MemoryUnavailable:
        raise
    except ResponseHandlingException as exc:  # server unreachable / timed out
        raise MemoryUnavailable(f"incident memory unreachable: {exc}") from exc
    except OSError as exc:
        raise MemoryUnavailable(f"incident memory unavailable: {exc}") from exc
    except RuntimeError as exc:
        text = str(exc)
        if "already accessed" in text or "closed" in text:
            raise MemoryUnavailable(f"incident memory unavailable: {text}") from exc
        raise


class IncidentMemory:
    """Incident memory over one Qdrant client (the process-wide one, or a bench's own)."""

    def __init__(
        self,
        client: QdrantClient,
        *,
        collection: str = COLLECTION,
        embedder: Embedder | None = None,
        payload_indexes: bool = False,
        local_index: bool | None = None,
    ) -> None:
        """`payload_indexes`: create them (server only). `local_index`: answer searches from a numpy
        mirror (default: when `client` is in local mode; see `rca.memory.local_index`)."""
        self.client = client
        self.collection = collection
        self.embedder = embedder or get_embedder()
        self._payload_indexes = payload_indexes
        if local_index is None:
            local_index = is_local(client)
        self._mirror: LocalIndex | None = LocalIndex(DIMENSION) if local_index else None
        self._ready = False
        self._ready_lock = threading.Lock()

    # -- collection -------------------------------------------------------------------------------

    def ensure_collection(self) -> None:
        """Create the collection (and, on a server, its payload indexes) if missing; check its shape."""
        if self._ready:
            return
        with self._ready_lock, _translated():
            if self._ready:
                return
            if not self.client.collection_exists(self.collection):
                try:
                    self.client.create_collection(
                        self.collection,
                        vectors_config=models.VectorParams(size=DIMENSION, distance=models.Distance.COSINE),
                    )
                except ValueError:  # local mode: it exists after all
                    pass
                except UnexpectedResponse as exc:  # server: another process created it first (409)
                    if exc.status_code != 409:
                        raise
                if self._payload_indexes:
                    for name in KEYWORD_FIELDS:
                        self.client.create_payload_index(
                            self.collection, name, field_schema=models.PayloadSchemaType.KEYWORD
                        )
                    self.client.create_payload_index(
                        self.collection, "onset_ts", field_schema=models.PayloadSchemaType.FLOAT
                    )
            vectors = self.client.get_collection(self.collection).config.params.vectors
            if not isinstance(vectors, models.VectorParams) or vectors.size != DIMENSION:
                raise ValueError(
                    f"collection {self.collection!r} has vectors {vectors!r}, expected {DIMENSION}-d cosine"
                )
            if self._mirror is not None:
                self._load_mirror(self._mirror)
            self._ready = True

    def _load_mirror(self, mirror: LocalIndex) -> None:
        """Copy what the store holds into the mirror (once, when this process opens the store)."""
        offset = None
        while True:
            records, offset = self.client.scroll(
                self.collection,
                limit=1000,
                offset=offset,
                with_payload=["incident_id", "onset_ts", "services", *KEYWORD_FIELDS],
                with_vectors=True,
            )
            for record in records:
                vector = np.asarray(record.vector, dtype=np.float32)
                if vector.shape == (DIMENSION,):
                    mirror.put(str(record.id), vector, record.payload or {})
            if offset is None:
                return

    def count(self) -> int:
        """How many incidents are stored."""
        self.ensure_collection()
        with _translated():
            return int(self.client.count(self.collection, exact=True).count)

    def status(self) -> str:
        """One line for health checks: the mode and how many incidents are stored."""
        mode = "local" if is_local(self.client) else "server"
        return f"qdrant {mode} ok ({self.count()} incidents)"

    # -- writes -----------------------------------------------------------------------------------

    def upsert(self, document: IncidentDocument) -> str:
        """Store (or replace) the incident's point; returns the point id."""
        return self.upsert_many([document])[0]

    def upsert_many(
        self,
        documents: Sequence[IncidentDocument],
        *,
        vectors: npt.NDArray[np.float32] | None = None,
        batch_size: int = 256,
    ) -> list[str]:
        """Store (or replace) many incidents, embedding them in batches; returns the point ids.

        `vectors` (one row per document, from this embedder) skips embedding, e.g. for a bulk rebuild.
        """
        if vectors is not None and len(vectors) != len(documents):
            raise ValueError(f"{len(vectors)} vectors for {len(documents)} documents")
        self.ensure_collection()
        ids: list[str] = []
        for start in range(0, len(documents), batch_size):
            batch = documents[start : start + batch_size]
            texts = [d.text() for d in batch]
            if vectors is None:
                batch_vectors = self.embedder.embed(texts)
            else:
                batch_vectors = vectors[start : start + batch_size]
            points = [
                models.PointStruct(
                    id=point_id(d.incident_id),
                    vector=vec.tolist(),
                    payload={**d.payload(), "text": text, "embedding_model": MODEL_ID},
                )
                for d, text, vec in zip(batch, texts, batch_vectors, strict=True)
            ]
            with _translated():
                self.client.upsert(self.collection, points=points, wait=True)
            if self._mirror is not None:
                for point, vec in zip(points, batch_vectors, strict=True):
                    self._mirror.put(str(point.id), vec, point.payload or {})
            ids.extend(str(p.id) for p in points)
        return ids

    def delete(self, incident_id: int) -> None:
        """Remove the incident's point (nothing happens if it isn't stored)."""
        self.ensure_collection()
        with _translated():
            self.client.delete(
                self.collection,
                points_selector=models.PointIdsList(points=[point_id(incident_id)]),
                wait=True,
            )
        if self._mirror is not None:
            self._mirror.remove(point_id(incident_id))

    def get(self, incident_id: int) -> IncidentDocument | None:
        """The stored document of an incident, if any."""
        self.ensure_collection()
        with _translated():
            records = self.client.retrieve(self.collection, ids=[point_id(incident_id)], with_payload=True)
        return IncidentDocument.from_payload(records[0].payload or {}) if records else None

    # -- reads ------------------------------------------------------------------------------------

    def search(
        self,
        text: str,
        filters: SearchFilters | None = None,
        limit: int = 10,
        *,
        floor: float = SEARCH_MIN_SIMILARITY,
    ) -> list[Hit]:
        """Past incidents similar in meaning to `text` (cosine similarity at least `floor`), best
        first, restricted by `filters`."""
        hits = self.search_vector(self.embedder.embed_one(text).tolist(), filters, limit)
        return [hit for hit in hits if hit.score >= floor]

    def search_vector(
        self, vector: list[float], filters: SearchFilters | None = None, limit: int = 10
    ) -> list[Hit]:
        """`search` with an already embedded query."""
        self.ensure_collection()
        if self._mirror is not None:
            return self._search_mirror(self._mirror, vector, filters, limit)
        with _translated():
            response = self.client.query_points(
                self.collection,
                query=vector,
                query_filter=filters.to_qdrant() if filters else None,
                limit=limit,
                with_payload=True,
            )
        hits = []
        for point in response.points:
            doc = IncidentDocument.from_payload(point.payload or {})
            hits.append(Hit(incident_id=doc.incident_id, score=float(point.score), document=doc))
        return hits

    def _search_mirror(
        self, mirror: LocalIndex, vector: list[float], filters: SearchFilters | None, limit: int
    ) -> list[Hit]:
        """Local mode: the mirror ranks, Qdrant (the store of record) supplies the payloads."""
        ranked = mirror.search(vector, filters, limit)
        if not ranked:
            return []
        with _translated():
            records = self.client.retrieve(self.collection, ids=[pid for pid, _ in ranked], with_payload=True)
        payloads = {str(r.id): r.payload or {} for r in records}
        hits = []
        for pid, score in ranked:
            if pid in payloads:
                doc = IncidentDocument.from_payload(payloads[pid])
                hits.append(Hit(incident_id=doc.incident_id, score=score, document=doc))
        return hits

    def recall(
        self,
        text: str,
        symptom: str | None = None,
        limit: int = RECALL_DEFAULT_LIMIT,
        *,
        exclude_incident: int | None = None,
    ) -> dict[str, float]:
        """Priors for seeding: service -> prior in [0, 1], from similar past incidents' proven root causes.

        Only confidently concluded incidents count (an unproven root cause is not worth a prior). A hit's
        weight rises linearly from 0 at RECALL_MIN_SIMILARITY to 1 at identical text, and is scaled by
        RECALL_OTHER_SYMPTOM_WEIGHT when it alerted on another service; a service takes its best hit's
        weight. The result is a prior and only a prior: it is never evidence and never validates anything.
        """
        query = f"{text.strip().rstrip('.')}. Symptom in {symptom}." if symptom else text
        filters = SearchFilters(exit="confident", exclude_incident=exclude_incident)
        priors: dict[str, float] = {}
        for hit in self.search(query, filters, limit=limit):
            doc = hit.document
            if not doc.confident:
                continue
            weight = (hit.score - RECALL_MIN_SIMILARITY) / (1.0 - RECALL_MIN_SIMILARITY)
            if symptom and doc.symptom_entity != symptom:
                weight *= RECALL_OTHER_SYMPTOM_WEIGHT
            weight = min(1.0, max(0.0, weight))
            if weight > 0.0 and weight > priors.get(doc.root_cause_entity, 0.0):
                priors[doc.root_cause_entity] = round(weight, 6)
        return priors


# -- the process-wide memory over rca.memory.store's client ------------------------------------------

_memories: weakref.WeakKeyDictionary[QdrantClient, IncidentMemory] = weakref.WeakKeyDictionary()
_memories_lock = threading.Lock()


def memory() -> IncidentMemory:
    """Incident memory over the process-wide client; raises MemoryUnavailable if it can't be opened."""
    from django.conf import settings

    from rca.memory.store import get_client

    try:
        client = get_client()
    except Exception as exc:  # the folder held by another process, a corrupt store, a bad URL
        raise MemoryUnavailable(f"incident memory can't be opened: {exc}") from exc
    with _memories_lock:
        mem = _memories.get(client)
        if mem is None:
            mem = IncidentMemory(client, payload_indexes=bool(settings.ROOTLINE_QDRANT_URL))
            _memories[client] = mem
        return mem


def index_incident(incident_id: int) -> str | None:
    """Index an incident as its latest succeeded investigation concluded it (what a task calls on
    conclusion; safe to repeat). An incident that no longer exists is removed. Returns the point id.

    Runs where the store is (the memory worker in local mode), so it uses the store directly.
    """
    from django.db.models import F
    from django.utils import timezone

    from rca.incidents.models import Incident, Investigation
    from rca.memory.documents import document_for

    incident = Incident.objects.filter(pk=incident_id).first()
    if incident is None:
        memory().delete(incident_id)
        return None
    investigation = (
        incident.investigations.filter(status=Investigation.Status.SUCCEEDED)
        .order_by(F("finished_at").desc(nulls_last=True), "-created_at", "-pk")
        .first()
    )
    pid = memory().upsert(document_for(incident, investigation))
    if investigation is not None:
        Investigation.objects.filter(pk=investigation.pk).update(indexed_at=timezone.now())
    return pid


def _via_worker() -> bool:
    """Whether this process reaches a local-mode store through the memory worker (rca.memory.remote)."""
    from django.conf import settings

    return bool(settings.ROOTLINE_MEMORY_VIA_WORKER) and not settings.ROOTLINE_QDRANT_URL


def upsert(document: IncidentDocument) -> str:
    """Store (or replace) one incident in the process-wide memory."""
    return memory().upsert(document)


def delete(incident_id: int) -> None:
    """Remove one incident from the process-wide memory."""
    memory().delete(incident_id)


def search(text: str, filters: SearchFilters | None = None, limit: int = 10) -> list[Hit]:
    """Search incident memory, where this process reaches it."""
    if _via_worker():
        found = remote.call(remote.SEARCH_TASK, text, filters.to_dict() if filters else None, limit)
        return [Hit.from_dict(hit) for hit in found]
    return memory().search(text, filters, limit)


def recall(
    text: str,
    symptom: str | None = None,
    limit: int = RECALL_DEFAULT_LIMIT,
    *,
    exclude_incident: int | None = None,
) -> dict[str, float]:
    """Seeding priors from incident memory (see `IncidentMemory.recall`); never evidence."""
    if _via_worker():
        found = remote.call(remote.RECALL_TASK, text, symptom, limit, exclude_incident)
        return {str(service): float(prior) for service, prior in found.items()}
    return memory().recall(text, symptom, limit, exclude_incident=exclude_incident)


def recall_for(incident: Incident) -> tuple[dict[str, float], str]:
    """Seeding priors for investigating `incident`, and a note on where they came from.

    Memory being unavailable is not an error here: the investigation goes on without priors, and the
    note (stored with the investigation) says why.
    """
    try:
        priors = recall(incident.title, incident.symptom_entity or None, exclude_incident=int(incident.pk))
    except MemoryUnavailable as exc:
        log.warning("recall for incident %s skipped: %s", incident.pk, exc)
        return {}, f"no recall: {exc}"
    if not priors:
        return {}, "no similar past incident with a proven root cause"
    return priors, f"priors from {len(priors)} similar past incident root cause(s)"


def status() -> str:
    """One line on the store (for /healthz), asked where this process reaches it."""
    if _via_worker():
        return str(remote.call(remote.STATUS_TASK))
    return memory().status()
