"""Words for the safety core's values on the pages: tier names and the gate's clauses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rca.core.actions import ActionTier

TIER_LABELS = {
    ActionTier.NOTIFY.value: "notify",
    ActionTier.ISSUE.value: "issue",
    ActionTier.PATCH.value: "patch",
    ActionTier.PULL_REQUEST.value: "pull request",
}
# The four gate clauses, in the order the gate applies them (rca.core.gate.evaluate).
GATE_CLAUSES = {
    1: "a hypothesis is validated by hard tool evidence: exit confident",
    2: "the turn or time budget is spent with nothing validated: no confident root cause",
    3: "the policy wanted to finish with nothing validated: no confident root cause",
    4: "nothing decided yet: keep investigating",
}


def gate_clause(gate: Mapping[str, Any]) -> str:
    """The gate's clause in words (the stored value is the clause number)."""
    clause = gate.get("clause")
    try:
        return f"clause {int(clause)}: {GATE_CLAUSES[int(clause)]}"  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError):
        return str(clause or "")
