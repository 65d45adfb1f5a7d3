"""The facts the tools record while an investigation runs, for the stages after them.

A tool that works out something a later stage needs writes it here as a typed fact instead of being
asked for it again: the conclusion, the recovery guidance and the stored result read these facts and
never the telemetry, and one tool reads another's facts instead of its code (the metrics tool reads the
spans' own time and the changes' canaries this way). `RunRecord` collects them during the run;
`RunFacts` is what the run leaves behind.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx

from rca.core.grounding import Citation
from rca.core.path_verification import Observation
from rca.telemetry.model import DependencyGraph, FloatArray, Modality
from rca.tools.graph import as_digraph

UNOBSERVED = Observation(deviates=None)  # nothing recorded for the entity: the hop rules can't be checked


@dataclass(frozen=True)
class ExaminedSeries:
    """A metric series a tool examined: its points in the incident window and the baseline (median and
    spread) it measured them against."""

    entity: str
    metric: str
    instance: str | None
    unit: str
    family: str
    timestamps: FloatArray
    values: FloatArray
    baseline: float
    spread: float
    z: float  # the deviation the tool found, in baseline spreads (bad direction)


@dataclass(frozen=True)
class ChangeFact:
    """What the change to one entity in the change window did, as the changes tool measured it."""

    entity: str
    by_onset: bool  # one of its changes had started by the onset hint
    score: float  # how much worse its new version is (z-like, >= 0)
    moved: bool  # the score is past the change tool's line for "the change moved something"
    made_worse: bool  # its new version is worse as strongly as a bad deploy needs to be supported
    never_served: bool  # a rollout started by onset whose new version never reported


@dataclass(frozen=True)
class ChangeFacts:
    """Every entity changed in the change window, by name."""

    entities: Mapping[str, ChangeFact] = field(default_factory=dict)

    def by_onset(self) -> set[str]:
        """Entities with a change that had started by the onset hint (a later one cannot have caused it)."""
        return {e for e, fact in self.entities.items() if fact.by_onset}

    def scores(self) -> dict[str, float]:
        """How much worse each changed entity's new version is (z-like, >= 0)."""
        return {e: fact.score for e, fact in self.entities.items()}

    def made_worse(self, entity: str) -> bool:
        """Whether the change to `entity` demonstrably made it worse."""
        fact = self.entities.get(entity)
        return fact is not None and fact.made_worse

    def never_served(self, entity: str) -> bool:
        """Whether a rollout of `entity` started by onset and its new version never reported."""
        fact = self.entities.get(entity)
        return fact is not None and fact.never_served

    def changed_below(self, g: nx.DiGraph, entity: str) -> list[str]:
        """Services `entity` depends on (directly or not) whose change had started by onset, unless the
        entity's own change demonstrably made it worse: its deviation may be their doing, which its own
        telemetry cannot rule out (a caller of a defective release fails with it). An entity's own quiet
        or late change explains nothing, so it does not shield the entity from a changed callee."""
        changed = self.by_onset()
        if not changed or self.made_worse(entity) or entity not in g:
            return []
        return sorted(changed & nx.descendants(g, entity))

    def explaining(self, g: nx.DiGraph, entities: Collection[str]) -> dict[str, list[str]]:
        """Per entity, the changed services below it whose change looks worse than its own (any change
        beats none; among changes, the higher score): its deviation may be theirs. A changed entity whose
        own change looks at least as bad competes with them on its own standing."""
        if not self.by_onset():
            return {}
        changed, scores = self.by_onset(), self.scores()

        def weight(e: str) -> tuple[bool, float]:
            return (e in changed, scores.get(e, 0.0))

        return {e: [d for d in self.changed_below(g, e) if weight(d) > weight(e)] for e in entities}


@dataclass
class RunRecord:
    """The facts recorded so far in one investigation (each written by the tool that works it out)."""

    own_time_z: dict[str, float] = field(default_factory=dict)  # traces: own span time vs its own past
    delayed_from: dict[str, str] = field(default_factory=dict)  # traces: the caller a delay came up through
    changes: ChangeFacts = field(default_factory=ChangeFacts)  # changes: the canary of every change
    citations: tuple[Citation, ...] = ()  # changes: every change in the citation window naming a reference
    observations: dict[str, Observation] = field(default_factory=dict)  # metrics: hop-rule observations
    series: dict[str, tuple[ExaminedSeries, ...]] = field(default_factory=dict)  # metrics, per entity


@dataclass(frozen=True)
class RunFacts:
    """What an investigation's tools recorded, with the graph and the alert they worked on: all that the
    conclusion, the recovery guidance and the stored result need after the loop."""

    symptom: str
    onset: float
    graph: DependencyGraph
    modalities: frozenset[Modality]
    observations: Mapping[str, Observation] = field(default_factory=dict)
    changes: ChangeFacts = field(default_factory=ChangeFacts)
    citations: tuple[Citation, ...] = ()
    series: Mapping[str, tuple[ExaminedSeries, ...]] = field(default_factory=dict)
    delayed_from: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def digraph(self) -> nx.DiGraph:
        """The dependency graph as networkx (built once)."""
        return as_digraph(self.graph)

    def observe(self, entity: str) -> Observation:
        """What the hop rules know of `entity` (unknown when nothing was recorded)."""
        return self.observations.get(entity, UNOBSERVED)
