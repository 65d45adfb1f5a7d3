"""Evidence records and the sink that refuses the model's own word.

An evidence item is what one real tool call said about one hypothesis. Its ``source`` is the
telemetry lane the tool read; ``llm_inferred`` marks anything the model asserted, which never
counts as proof and is refused by :class:`EvidenceSink`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from rca.core.redact import summarize

SignalValue = float | int | str | bool


class Source(StrEnum):
    """Provenance lane of an evidence item."""

    METRICS = "metrics"
    LOGS = "logs"
    TRACES = "traces"
    EVENTS = "events"
    CHANGES = "changes"
    TOPOLOGY = "topology"
    SYNTHETIC = "synthetic"
    LLM_INFERRED = "llm_inferred"


class Verdict(StrEnum):
    """What a tool result says about a fault hypothesis."""

    SUPPORTS = "supports"
    REFUTES = "refutes"
    INCONCLUSIVE = "inconclusive"


# Lanes that describe structure (what may propagate to what), never behaviour: their evidence can
# never validate a hypothesis by itself.
STRUCTURAL_SOURCES: frozenset[Source] = frozenset({Source.TOPOLOGY})


def no_signals() -> Mapping[str, SignalValue]:
    """A fresh empty, read-only signal mapping (the default for records without signals)."""
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Evidence:
    """One immutable piece of evidence about one hypothesis.

    ``summary`` is normalised on construction (redacted, recon-stripped, one line, at most 280
    characters), so no record can ever hold a secret or a raw multi-line log excerpt.
    ``observed_at`` is in unix seconds. ``signals`` is copied into a read-only mapping.
    """

    tool: str
    hypothesis_id: str
    summary: str
    verdict: Verdict
    source: Source
    observed_at: float
    signals: Mapping[str, SignalValue] = field(default_factory=no_signals, hash=False)

    def __post_init__(self) -> None:
        # Frozen dataclass: normalise through object.__setattr__ once, at the door.
        object.__setattr__(self, "summary", summarize(self.summary))
        object.__setattr__(self, "verdict", Verdict(self.verdict))
        object.__setattr__(self, "source", Source(self.source))
        object.__setattr__(self, "observed_at", float(self.observed_at))
        object.__setattr__(self, "signals", MappingProxyType(dict(self.signals)))

    @property
    def is_hard(self) -> bool:
        """True for evidence from a real tool lane, False for the model's own assertion."""
        return self.source is not Source.LLM_INFERRED

    @property
    def validates(self) -> bool:
        """True when this item alone is enough to validate its hypothesis: hard, supporting, and from a
        lane that observes behaviour (a structural lane never validates)."""
        return self.is_hard and self.verdict is Verdict.SUPPORTS and self.source not in STRUCTURAL_SOURCES


class EvidenceSink:
    """Append-only store of evidence, keyed by hypothesis id.

    The one mutable object of the core: the capture decorator records into it and each gate
    boundary takes an immutable snapshot from it.
    """

    def __init__(self) -> None:
        self._items: list[Evidence] = []

    def record(self, evidence: Evidence) -> bool:
        """Store ``evidence``; refuse (return False, store nothing) when it is ``llm_inferred``."""
        if not evidence.is_hard:
            return False
        self._items.append(evidence)
        return True

    def evidence_for(self, hypothesis_id: str) -> tuple[Evidence, ...]:
        """Evidence recorded for one hypothesis, in recording order."""
        return tuple(e for e in self._items if e.hypothesis_id == hypothesis_id)

    def all(self) -> tuple[Evidence, ...]:
        """Every stored item, in recording order."""
        return tuple(self._items)

    def __len__(self) -> int:
        return len(self._items)
