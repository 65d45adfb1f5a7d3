"""Named engine configurations for ablations: each switches one mechanism off (or to shadow)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from rca.core.modes import Mode
from rca.investigation.engine import EngineConfig
from rca.tools.registry import ALL_TOOLS

FULL = EngineConfig()

VARIANTS: Mapping[str, EngineConfig] = MappingProxyType(
    {
        "full": FULL,
        "gate_shadow": replace(FULL, gate_mode=Mode.SHADOW),
        "cap_shadow": replace(FULL, cap_mode=Mode.SHADOW),
        "no_belief_propagation": replace(FULL, belief_propagation=False, blame_propagation=False),
        "no_logs": replace(FULL, tools=frozenset(ALL_TOOLS) - {"logs"}),
        "no_traces": replace(FULL, tools=frozenset(ALL_TOOLS) - {"traces"}),
        "no_logs_no_traces": replace(FULL, tools=frozenset(ALL_TOOLS) - {"logs", "traces"}),
    }
)
