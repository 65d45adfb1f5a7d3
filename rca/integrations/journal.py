"""The record of what a writer sent to external systems, or in dry run would have sent, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ReadsWithheld(Exception):
    """A read was about to be sent through a journal that withholds reads (`Journal.reads` False)."""


@dataclass
class Journal:
    """The requests an execution sent, or in dry run would have sent (writes), in order.

    With `reads` False even reads are withheld: the first one raises ReadsWithheld, so a caller learns
    whether an action fails before it needs anything from the outside (the approval check).
    """

    dry_run: bool
    entries: list[dict[str, Any]] = field(default_factory=list)
    reads: bool = True
    # A preview's time budget (seconds): each request gets one attempt within it, no retries; None:
    # the client's own retry policy and timeout (an execution).
    budget_s: float | None = None

    def before_read(self) -> None:
        """Raise ReadsWithheld when this journal withholds reads."""
        if not self.reads:
            raise ReadsWithheld("this journal withholds reads")

    def record(self, method: str, url: str, payload: Any = None, *, sent: bool) -> dict[str, Any]:
        """Append one exchange; the caller fills in `status` once answered."""
        entry: dict[str, Any] = {"method": method, "url": url, "sent": sent}
        if payload is not None:
            entry["payload"] = payload
        self.entries.append(entry)
        return entry
