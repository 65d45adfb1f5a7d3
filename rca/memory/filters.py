"""What a search over incident memory may be restricted to, in the forms the store and the worker use.

Shared by the Qdrant-backed index (`rca.memory.index`), the numpy mirror of local mode
(`rca.memory.local_index`) and the memory worker's task arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from qdrant_client import models


@dataclass(frozen=True)
class SearchFilters:
    """Search restrictions; every field set must hold (AND). A sequence means "any of these".

    `service` matches an incident whose involved services include it; `since` / `until` bound the onset
    (since inclusive, until exclusive).
    """

    service: str | Sequence[str] | None = None
    fault_kind: str | Sequence[str] | None = None
    tier: str | Sequence[str] | None = None
    exit: str | Sequence[str] | None = None
    symptom: str | Sequence[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    exclude_incident: int | None = None

    def to_qdrant(self) -> models.Filter | None:
        """The Qdrant filter (None when nothing is restricted)."""
        must: list[models.Condition] = []
        for key, value in (
            ("services", self.service),
            ("fault_kind", self.fault_kind),
            ("tier", self.tier),
            ("exit", self.exit),
            ("symptom_entity", self.symptom),
        ):
            if value is None:
                continue
            if isinstance(value, str):
                must.append(models.FieldCondition(key=key, match=models.MatchValue(value=value)))
            else:
                must.append(models.FieldCondition(key=key, match=models.MatchAny(any=list(value))))
        if self.since is not None or self.until is not None:
            must.append(
                models.FieldCondition(
                    key="onset_ts",
                    range=models.Range(
                        gte=self.since.timestamp() if self.since else None,
                        lt=self.until.timestamp() if self.until else None,
                    ),
                )
            )
        must_not: list[models.Condition] = []
        if self.exclude_incident is not None:
            must_not.append(
                models.FieldCondition(key="incident_id", match=models.MatchValue(value=self.exclude_incident))
            )
        if not must and not must_not:
            return None
        return models.Filter(must=must or None, must_not=must_not or None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (a search sent to the memory worker)."""
        data: dict[str, Any] = {}
        for name, value in vars(self).items():
            if isinstance(value, datetime):
                value = value.isoformat()
            elif value is not None and not isinstance(value, str | int):
                value = list(value)  # a sequence of alternatives
            data[name] = value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchFilters:
        """The inverse of `to_dict`."""
        values = dict(data)
        for name in ("since", "until"):
            if values.get(name) is not None:
                values[name] = datetime.fromisoformat(values[name])
        return cls(**values)
