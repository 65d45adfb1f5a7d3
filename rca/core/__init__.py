"""Rootline's pure reasoning-safety core: evidence, verdicts, hypotheses, gate, grounding, actions.

Nothing in this package performs I/O, reads a clock or imports anything outside the standard
library; time is always passed in.
"""

from rca.core.actions import (
    ActionTier,
    Outcome,
    OutcomeKind,
    TierStatement,
    map_outcome,
    max_allowed_tier,
    shown_confidence,
    state_tier,
    tier_for,
)
from rca.core.evidence import Evidence, EvidenceSink, Source, Verdict
from rca.core.gate import GateBudget, GateDecision, GateExit, GateState, control, evaluate
from rca.core.grounding import (
    CAP_PARTIAL,
    CAP_UNGROUNDED,
    Citation,
    EvidenceChain,
    Grounding,
    apply_cap,
    assemble_chain,
    cap_confidence,
    derive_grounding,
    nearest_citation,
)
from rca.core.hypotheses import Conclusion, Hypothesis, HypothesisState, HypothesisTree, derive_state
from rca.core.modes import Mode
from rca.core.redact import one_line, redact
from rca.core.verdict import Thresholds, ToolOutput, classify, classify_text

__all__ = [
    "CAP_PARTIAL",
    "CAP_UNGROUNDED",
    "ActionTier",
    "Citation",
    "Conclusion",
    "Evidence",
    "EvidenceChain",
    "EvidenceSink",
    "GateBudget",
    "GateDecision",
    "GateExit",
    "GateState",
    "Grounding",
    "Hypothesis",
    "HypothesisState",
    "HypothesisTree",
    "Mode",
    "Outcome",
    "OutcomeKind",
    "Source",
    "Thresholds",
    "TierStatement",
    "ToolOutput",
    "Verdict",
    "apply_cap",
    "assemble_chain",
    "cap_confidence",
    "classify",
    "classify_text",
    "control",
    "derive_grounding",
    "derive_state",
    "evaluate",
    "map_outcome",
    "max_allowed_tier",
    "nearest_citation",
    "one_line",
    "redact",
    "shown_confidence",
    "state_tier",
    "tier_for",
]
