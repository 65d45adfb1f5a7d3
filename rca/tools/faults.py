"""Fault kinds a hypothesis can name, and the metric families that reveal each."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from rca.tools.stats import Family


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
