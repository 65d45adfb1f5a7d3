"""The payload index local mode lacks: a numpy mirror of the vectors and the filterable payload fields.

Qdrant's local mode keeps every point in memory and, for a filtered query, evaluates the filter on every
point in Python (payload indexes "have no effect" there). Over 10,000 incidents that is a few hundred
milliseconds per filtered search. This mirror answers the same question (cosine top-k under service /
fault kind / tier / exit / symptom / time filters) with vectorised numpy, in about a millisecond.

It is safe only because local mode allows one process per store (Qdrant's own lock): that process's
`IncidentMemory` is the only writer, so the mirror is loaded from the store once and then kept in step
with every upsert and delete made through it. Qdrant stays the store of record: hits' payloads are read
back from it. With a Qdrant server the mirror is not used (the server has real payload indexes, and other
processes write too).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rca.memory.filters import SearchFilters

# Single-valued keyword fields, kept as integer codes per row.
_SCALAR_FIELDS = ("fault_kind", "tier", "exit", "symptom_entity")


class LocalIndex:
    """Vectors, incident ids, onsets and keyword fields of every stored point, as numpy columns."""

    def __init__(self, dimension: int, capacity: int = 1024) -> None:
        self._dim = dimension
        self._lock = threading.Lock()
        self._row_of: dict[str, int] = {}  # point id -> row
        self._point_ids: list[str] = []  # row -> point id
        self._vectors = np.zeros((capacity, dimension), dtype=np.float32)
        self._alive = np.zeros(capacity, dtype=bool)
        self._incident = np.zeros(capacity, dtype=np.int64)
        self._onset = np.zeros(capacity, dtype=np.float64)
        self._codes = {f: np.full(capacity, -1, dtype=np.int32) for f in _SCALAR_FIELDS}
        self._vocab: dict[str, dict[str, int]] = {f: {} for f in _SCALAR_FIELDS}
        self._service_rows: dict[str, set[int]] = {}
        self._row_services: list[tuple[str, ...]] = []

    def __len__(self) -> int:
        with self._lock:
            return int(self._alive[: len(self._point_ids)].sum())

    # -- writes -----------------------------------------------------------------------------------

    def put(
        self, point_id: str, vector: Sequence[float] | npt.NDArray[np.float32], payload: Mapping[str, Any]
    ) -> None:
        """Add or replace one point."""
        vec = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(vec))
        vec = vec / norm if norm > 0 else vec  # cosine, as Qdrant normalises on upsert
        with self._lock:
            row = self._row_of.get(point_id)
            if row is None:
                row = len(self._point_ids)
                self._grow(row + 1)
                self._row_of[point_id] = row
                self._point_ids.append(point_id)
                self._row_services.append(())
            else:
                self._unlink_services(row)
            self._vectors[row] = vec
            self._alive[row] = True
            self._incident[row] = int(payload.get("incident_id", -1))
            self._onset[row] = float(payload.get("onset_ts", 0.0))
            for field in _SCALAR_FIELDS:
                vocab = self._vocab[field]
                value = str(payload.get(field, ""))
                self._codes[field][row] = vocab.setdefault(value, len(vocab))
            services = tuple(dict.fromkeys(str(s) for s in payload.get("services", ())))
            self._row_services[row] = services
            for service in services:
                self._service_rows.setdefault(service, set()).add(row)

    def remove(self, point_id: str) -> None:
        """Forget one point (its row stays allocated and is reused if the point comes back)."""
        with self._lock:
            row = self._row_of.get(point_id)
            if row is not None:
                self._alive[row] = False
                self._unlink_services(row)

    def _unlink_services(self, row: int) -> None:
        for service in self._row_services[row]:
            rows = self._service_rows.get(service)
            if rows is not None:
                rows.discard(row)
        self._row_services[row] = ()

    def _grow(self, needed: int) -> None:
        capacity = len(self._alive)
        if needed <= capacity:
            return
        new = max(needed, capacity * 2)
        self._vectors = np.resize(self._vectors, (new, self._dim))
        self._alive = np.concatenate([self._alive, np.zeros(new - capacity, dtype=bool)])
        self._incident = np.concatenate([self._incident, np.zeros(new - capacity, dtype=np.int64)])
        self._onset = np.concatenate([self._onset, np.zeros(new - capacity, dtype=np.float64)])
        for field in _SCALAR_FIELDS:
            pad = np.full(new - capacity, -1, dtype=np.int32)
            self._codes[field] = np.concatenate([self._codes[field], pad])

    # -- reads ------------------------------------------------------------------------------------

    def search(
        self, query: Sequence[float] | npt.NDArray[np.float32], filters: SearchFilters | None, limit: int
    ) -> list[tuple[str, float]]:
        """(point id, cosine) of the best `limit` points that satisfy `filters`, best first."""
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        q = q / norm if norm > 0 else q
        with self._lock:
            n = len(self._point_ids)
            mask = self._alive[:n].copy()
            if filters is not None:
                mask &= self._mask(filters, n)
            rows = np.flatnonzero(mask)
            if rows.size == 0 or limit <= 0:
                return []
            # Most rows pass: one contiguous mat-vec beats gathering (copying) the rows first.
            dense = rows.size * 4 > n
            scores = (self._vectors[:n] @ q)[rows] if dense else self._vectors[rows] @ q
            k = min(limit, rows.size)
            top = np.argpartition(-scores, k - 1)[:k] if k < rows.size else np.arange(rows.size)
            top = top[np.argsort(-scores[top], kind="stable")]
            return [(self._point_ids[int(rows[i])], float(scores[i])) for i in top]

    def _mask(self, f: SearchFilters, n: int) -> npt.NDArray[np.bool_]:
        mask = np.ones(n, dtype=bool)
        for field, wanted in (
            ("fault_kind", f.fault_kind),
            ("tier", f.tier),
            ("exit", f.exit),
            ("symptom_entity", f.symptom),
        ):
            if wanted is not None:
                vocab = self._vocab[field]
                codes = [vocab[v] for v in _values(wanted) if v in vocab]
                mask &= np.isin(self._codes[field][:n], codes)
        if f.service is not None:
            in_any = np.zeros(n, dtype=bool)
            for service in _values(f.service):
                rows = self._service_rows.get(service)
                if rows:
                    in_any[np.fromiter(rows, dtype=np.int64, count=len(rows))] = True
            mask &= in_any
        if f.since is not None:
            mask &= self._onset[:n] >= f.since.timestamp()
        if f.until is not None:
            mask &= self._onset[:n] < f.until.timestamp()
        if f.exclude_incident is not None:
            mask &= self._incident[:n] != f.exclude_incident
        return mask


def _values(value: str | Iterable[str]) -> list[str]:
    """A filter value as a list: one string is one value, not its characters."""
    return [value] if isinstance(value, str) else [str(v) for v in value]
