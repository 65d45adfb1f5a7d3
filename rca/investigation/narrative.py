"""Plain-language renderings of a stored investigation result (the dict of `InvestigationResult.to_dict`).

They read only what the engine recorded, so the sentence a page shows and the body of an issue or
pull request say exactly what the evidence says, nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_GROUNDING_WORDS = {
    "grounded": "grounded by validating evidence and a change citation",
    "partially_grounded": "partially grounded",
    "ungrounded": "ungrounded",
}


def outcome_sentence(result: Mapping[str, Any]) -> str:
    """One sentence: who is the root cause and how well it is grounded, or why there is none."""
    root = result.get("root_cause")
    chain = result.get("chain") or {}
    if result.get("exit") == "confident" and root:
        grounding = _GROUNDING_WORDS.get(str(chain.get("grounding")), str(chain.get("grounding")))
        citation = chain.get("citation")
        cited = f" ({citation['kind']} {citation['ref']})" if citation else ""
        return f"Confident: {root['entity']} is the root cause ({_kind(root)}), {grounding}{cited}."
    hypotheses = result.get("hypotheses") or []
    undecided = sum(1 for h in hypotheses if h.get("state") == "inconclusive")
    gate = result.get("gate") or {}
    reason = str(result.get("stop_reason") or gate.get("reason") or "nothing was validated")
    return (
        f"No confident root cause: {reason}; {len(hypotheses)} hypotheses examined, {undecided} inconclusive."
    )


def _kind(root: Mapping[str, Any]) -> str:
    """The fault kind, with the detail the last level named (`cpu, instance carts-1`)."""
    what, _, name = str(root.get("detail") or "").partition(":")
    return f"{root['fault_kind']}, {what} {name}" if what and name else str(root["fault_kind"])


def action_title(result: Mapping[str, Any], symptom: str) -> str:
    """A title for the proposed action."""
    root = result.get("root_cause")
    if result.get("exit") == "confident" and root:
        return f"{root['entity']} ({_kind(root)}) caused the {symptom} incident"
    return f"{symptom} incident: no confident root cause"


def action_body(result: Mapping[str, Any], link: str = "") -> str:
    """Markdown body of an issue / patch / pull request: path, validating evidence, citation, grounding."""
    lines = [outcome_sentence(result), ""]
    path = result.get("path") or []
    if path:
        lines.append("Propagation path (cause -> effect):")
        for hop in path:
            note = "" if hop.get("edge") else " (no call edge recorded)"
            lines.append(f"- {hop['cause']} -> {hop['effect']}{note}")
        lines.append("")
    chain = result.get("chain") or {}
    evidence = chain.get("evidence") or []
    if evidence:
        lines.append("Validating evidence:")
        lines.extend(f"- [{e['source']}/{e['tool']}] {e['summary']}" for e in evidence)
        lines.append("")
    citation = chain.get("citation")
    if citation:
        lines.append(f"Change citation: {citation['kind']} {citation['ref']} on {citation['entity']}")
    outcome = result.get("outcome") or {}
    lines.append(
        f"Grounding: {outcome.get('grounding', chain.get('grounding'))}; confidence "
        f"{outcome.get('raw_confidence', 0):.2f} raw, {outcome.get('capped_confidence', 0):.2f} capped; "
        f"tier {outcome.get('tier')}."
    )
    if link:
        lines += ["", f"Investigation: {link}"]
    lines += ["", "Proposed by Rootline from tool evidence; nothing was changed automatically."]
    return "\n".join(lines)
