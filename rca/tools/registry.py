"""Which evidence tools exist, and the hooks the investigation reaches them through.

Each tool is a package `rca.tools.<name>` whose `SPEC` (a `ToolSpec`) declares it next to its code.
A new tool is one new package and one line in `PACKAGES`, whose order is the order the policy calls
the tools in (and so the order of each hypothesis's evidence).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from importlib import import_module

from rca.core.hypotheses import Hypothesis
from rca.core.levels import detail_parts
from rca.telemetry.model import Modality, TelemetryError
from rca.tools.base import Seeding, Tool, ToolContext, ToolSpec
from rca.tools.facts import RunFacts
from rca.tools.faults import FaultKind

log = logging.getLogger(__name__)

PACKAGES: tuple[str, ...] = (
    "metrics",
    "logs",
    "traces",
    "changes",
    "topology",
)


def _spec(package: str) -> ToolSpec:
    spec = getattr(import_module(f"{__package__}.{package}"), "SPEC", None)
    if not isinstance(spec, ToolSpec) or spec.name != package:
        raise TypeError(f"rca.tools.{package} must declare SPEC = ToolSpec(name={package!r}, ...)")
    return spec


SPECS: tuple[ToolSpec, ...] = tuple(_spec(p) for p in PACKAGES)
ALL_TOOLS: tuple[str, ...] = tuple(s.name for s in SPECS)


def usable(enabled: Iterable[str], available: frozenset[Modality]) -> tuple[ToolSpec, ...]:
    """The enabled tools whose telemetry the source has (any one of what each needs), in order."""
    wanted = set(enabled)
    return tuple(s for s in SPECS if s.name in wanted and (not s.needs or s.needs & available))


def instances(specs: Iterable[ToolSpec]) -> dict[str, Tool]:
    """A fresh instance of each tool, by name, in order."""
    return {s.name: s.make() for s in specs}


def seedings(specs: Sequence[ToolSpec]) -> dict[str, Seeding]:
    """The seeding contributions of `specs`: those whose facts another seeding reads first, then the rest
    in order."""
    seeding = {s.name: s.seeding for s in specs if s.seeding is not None}
    read = {name for s in seeding.values() for name in s.reads}
    return dict(sorted(seeding.items(), key=lambda item: item[0] not in read))


def examiners(child: Hypothesis, tools: Iterable[str]) -> tuple[str, ...]:
    """The available tools that examine `child` on their own: the one that checks its detail, or those
    whose answer speaks to its fault kind alone (in order)."""
    what, _ = detail_parts(child)
    available = set(tools)
    return tuple(
        s.name
        for s in SPECS
        if s.name in available and (what in s.checks if what else child.fault_kind in s.examines)
    )


def kinds_at(ctx: ToolContext, entity: str, tools: Iterable[str]) -> list[FaultKind]:
    """The fault kinds the available tools' telemetry makes plausible at `entity`, tool by tool."""
    found: list[FaultKind] = []
    for spec in SPECS:
        if spec.kinds is None or spec.name not in set(tools):
            continue
        try:
            found += spec.kinds(ctx, entity)
        except TelemetryError as exc:  # a backend down: refine on what is known
            log.warning("fault kinds of %s from %s: %s", entity, spec.name, exc)
    return found


def details_at(ctx: ToolContext, entity: str, kind: FaultKind, tools: Iterable[str]) -> list[str]:
    """The details the available tools name below `entity`'s `kind`: those of the tools that examine
    the kind first, then the others'."""
    found: list[str] = []
    for spec in sorted(SPECS, key=lambda s: kind.value not in s.examines):
        if spec.details is None or spec.name not in set(tools):
            continue
        try:
            found += spec.details(ctx, entity, kind)
        except TelemetryError as exc:
            log.warning("details of %s %s from %s: %s", entity, kind.value, spec.name, exc)
    return found


def record_facts(ctx: ToolContext, specs: Iterable[ToolSpec], modalities: frozenset[Modality]) -> RunFacts:
    """Have each tool record what the conclusion needs from it, and hand over everything recorded
    (`modalities`: what the source offered)."""
    for spec in specs:
        if spec.record is not None:
            try:
                spec.record(ctx)
            except TelemetryError as exc:  # a backend down: the conclusion works with what is known
                log.warning("%s could not record its facts: %s", spec.name, exc)
    record = ctx.record
    return RunFacts(
        symptom=ctx.alert.entity,
        onset=ctx.onset,
        graph=ctx.graph,
        modalities=modalities,
        observations=dict(record.observations),
        changes=record.changes,
        citations=record.citations,
        series=dict(record.series),
        delayed_from=dict(record.delayed_from),
    )
