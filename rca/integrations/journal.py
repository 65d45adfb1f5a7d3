"""The record of what a writer sent to external systems, or in dry run would have sent, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Journal:
    """The requests an execution sent, or in dry run would have sent (writes), in order."""

    dry_run: bool
    entries: list[dict[str, Any]] = field(default_factory=list)

    def record(self, method: str, url: str, payload: Any = None, *, sent: bool) -> dict[str, Any]:
        """Append one exchange; the caller fills in `status` once answered."""
        entry: dict[str, Any] = {"method": method, "url": url, "sent": sent}
        if payload is not None:
            entry["payload"] = payload
        self.entries.append(entry)
        return entry
