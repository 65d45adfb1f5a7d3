"""Fault kinds a hypothesis can name, and the metric families that reveal each."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from rca.tools.stats import Family, family_of


class FaultKind(StrEnum):
    """The second level of a hypothesis: what kind of fault the entity has."""

    CPU = "cpu"
    MEMORY = "memory"
    LATENCY = "latency"  # latency / network delay
    ERRORS = "errors"  # errors / exceptions / wrong responses
    POD_FAILURE = "pod_failure"
    BAD_DEPLOY = "bad_deploy"  # a bad deploy or configuration change


FAMILIES_OF_KIND: Mapping[FaultKind, tuple[Family, ...]] = MappingProxyType(
    {
        FaultKind.CPU: (Family.CPU,),
        FaultKind.MEMORY: (Family.MEMORY,),
        FaultKind.LATENCY: (Family.LATENCY, Family.NETWORK),
        FaultKind.ERRORS: (Family.ERRORS,),
        FaultKind.POD_FAILURE: (Family.ERRORS, Family.TRAFFIC),
        FaultKind.BAD_DEPLOY: (Family.ERRORS, Family.LATENCY, Family.CPU, Family.MEMORY),
    }
)

# Families that can show a kind but whose calm cannot clear it: a delay, in the application or on the
# wire, need not change the bytes an entity sends or receives, so only a latency series can clear a
# latency fault; network throughput that moves is evidence for one, network throughput that does not
# is no evidence against it.
SUPPORT_ONLY: Mapping[FaultKind, frozenset[Family]] = MappingProxyType(
    {FaultKind.LATENCY: frozenset({Family.NETWORK})}
)
# The kinds an origin's own log shows (docs/fault-signatures.md): error lines and new error templates,
# its lines stopping. A delay, a CPU hog or a growing heap usually writes nothing of its own, so calm
# logs clear none of those.
SHOWN_IN_LOGS: frozenset[FaultKind] = frozenset(
    {FaultKind.ERRORS, FaultKind.POD_FAILURE, FaultKind.BAD_DEPLOY}
)
# And those its spans show: every kind but a growing heap, whose own time rises only late, if at all
# (garbage collection), so calm spans do not clear a memory fault.
SHOWN_IN_SPANS: frozenset[FaultKind] = frozenset(FaultKind) - {FaultKind.MEMORY}

# Which kind a moved family points to, when it is the strongest signal of a suspect. Traffic is not
# here: a change in load is what a fault does to its callers and callees, never a cause by itself.
KIND_OF_FAMILY: Mapping[Family, FaultKind] = MappingProxyType(
    {
        Family.CPU: FaultKind.CPU,
        Family.MEMORY: FaultKind.MEMORY,
        Family.LATENCY: FaultKind.LATENCY,
        Family.NETWORK: FaultKind.LATENCY,
        Family.ERRORS: FaultKind.ERRORS,
    }
)

# How well a family moving at a suspect explains the family the alert fired on (the alert's family
# moving at the suspect explains it fully; a neighbouring family only in part).
EXPLAINS: Mapping[Family, Mapping[Family, float]] = MappingProxyType(
    {
        Family.ERRORS: {Family.ERRORS: 1.0, Family.LATENCY: 0.5, Family.CPU: 0.5, Family.MEMORY: 0.5},
        Family.LATENCY: {
            Family.LATENCY: 1.0,
            Family.ERRORS: 0.5,
            Family.CPU: 1.0,
            Family.MEMORY: 0.7,
            Family.NETWORK: 0.5,
        },
    }
)
DEFAULT_SYMPTOM = Family.LATENCY


def named_symptom(alert_metric: str | None) -> Family | None:
    """The family the alert's metric names, when it is one whose explanations are known."""
    found = family_of(alert_metric or "")
    return found[0] if found and found[0] in EXPLAINS else None


def symptom_family(alert_metric: str | None) -> Family:
    """The family the alert fired on (latency when it does not say)."""
    return named_symptom(alert_metric) or DEFAULT_SYMPTOM
