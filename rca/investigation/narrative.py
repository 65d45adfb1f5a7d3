"""Plain-language renderings of a result document (`rca.investigation.document`).

They read only what the engine recorded, so the sentence a page shows and the body of an issue or
pull request say exactly what the evidence says, nothing more.
"""

from __future__ import annotations

from rca.core.guidance import FailureAnchor
from rca.investigation.document import CandidateDoc, ResultDocument

_GROUNDING_WORDS = {
    "grounded": "grounded by validating evidence and a change citation",
    "partially_grounded": "partially grounded",
    "ungrounded": "ungrounded",
}


def outcome_sentence(result: ResultDocument) -> str:
    """One sentence: who is the root cause and how well it is grounded, or why there is none."""
    root, chain = result.root_cause, result.chain
    if result.confident and root:
        grounding = _GROUNDING_WORDS.get(chain.grounding, chain.grounding)
        citation = chain.citation
        cited = f" ({citation.kind} {citation.ref})" if citation else ""
        return f"Confident: {root.entity} is the root cause ({_kind(root)}), {grounding}{cited}."
    if result.guidance is not None and result.guidance.anchor == FailureAnchor.NOTHING_EXAMINED:
        return f"Nothing was examined: {result.guidance.detail.removeprefix('nothing was examined: ')}."
    undecided = sum(1 for h in result.hypotheses if h.state == "inconclusive")
    reason = result.stop_reason or result.gate.reason or "nothing was validated"
    return (
        f"No confident root cause: {reason}; {len(result.hypotheses)} hypotheses examined, "
        f"{undecided} inconclusive."
    )


def _kind(root: CandidateDoc) -> str:
    """The fault kind, with the detail the last level named (`cpu, instance carts-1`)."""
    what, _, name = root.detail.partition(":")
    return f"{root.fault_kind}, {what} {name}" if what and name else root.fault_kind


def action_title(result: ResultDocument, symptom: str) -> str:
    """A title for the proposed action."""
    root = result.root_cause
    if result.confident and root:
        return f"{root.entity} ({_kind(root)}) caused the {symptom} incident"
    return f"{symptom} incident: no confident root cause"


def action_body(result: ResultDocument, link: str = "") -> str:
    """Markdown body of an issue / patch / pull request: path, validating evidence, citation, grounding."""
    lines = [outcome_sentence(result), ""]
    if result.path:
        lines.append("Propagation path (cause -> effect):")
        for hop in result.path:
            note = "" if hop.edge else " (no call edge recorded)"
            lines.append(f"- {hop.cause} -> {hop.effect}{note}")
        lines.append("")
    chain = result.chain
    if chain.evidence:
        lines.append("Validating evidence:")
        lines.extend(f"- [{e.source}/{e.tool}] {e.summary}" for e in chain.distinct_evidence())
        lines.append("")
    if chain.citation:
        citation = chain.citation
        lines.append(f"Change citation: {citation.kind} {citation.ref} on {citation.entity}")
    outcome = result.outcome
    lines.append(
        f"Grounding: {outcome.grounding or chain.grounding}; confidence "
        f"{outcome.raw_confidence or 0:.2f} raw, {outcome.capped_confidence or 0:.2f} capped; "
        f"tier {outcome.tier}."
    )
    if link:
        lines += ["", f"Investigation: {link}"]
    lines += ["", "Proposed by Rootline from tool evidence; nothing was changed automatically."]
    return "\n".join(lines)
