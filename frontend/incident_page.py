"""What the incident page shows: the outcome, why the gate stopped, the evidence chain and ladder, the
hypothesis tree, the timeline and similar past incidents; and the progress its poller reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from frontend.labels import TIER_LABELS, gate_clause
from frontend.ladder import ladder
from frontend.past_incidents import similar_incidents
from frontend.results import result_of
from frontend.timeline import EvidenceLine, timeline
from rca.incidents.models import Hypothesis, Incident, Investigation
from rca.investigation.narrative import outcome_sentence

FINISHED = (Investigation.Status.SUCCEEDED, Investigation.Status.FAILED)


def latest_investigation(incident: Incident) -> Investigation | None:
    """The incident's most recent investigation (queued, running or finished)."""
    return incident.investigations.order_by("-created_at", "-pk").first()


@dataclass
class HypothesisNode:
    """A hypothesis with its evidence lines (shown in the timeline, linked from here) and its
    children (by parent_key), for the tree."""

    hypothesis: Hypothesis
    lines: list[EvidenceLine]
    children: list[HypothesisNode] = field(default_factory=list)


def hypothesis_tree(
    investigation: Investigation, lines: Mapping[str, list[EvidenceLine]]
) -> tuple[list[HypothesisNode], list[Hypothesis]]:
    """Roots of the hypothesis tree in rank order (an orphan, whose parent is unknown, is a root too);
    `lines` are the evidence lines of each hypothesis key."""
    hypotheses = list(investigation.hypotheses.order_by("rank", "key"))
    nodes = {h.key: HypothesisNode(h, lines.get(h.key, [])) for h in hypotheses}
    roots: list[HypothesisNode] = []
    for h in hypotheses:
        parent = nodes.get(h.parent_key) if h.parent_key and h.parent_key != h.key else None
        (parent.children if parent else roots).append(nodes[h.key])
    return roots, hypotheses


def detail(incident: Incident) -> dict[str, Any]:
    """Everything the incident page shows, as template context."""
    investigation = latest_investigation(incident)
    events = timeline(incident)
    context: dict[str, Any] = {
        "incident": incident,
        "timeline": events.entries,
        "investigation": investigation,
        "attempts": incident.investigations.count(),
        "running": investigation is not None and investigation.status not in FINISHED,
    }
    if investigation is None or investigation.status != Investigation.Status.SUCCEEDED:
        return context
    from rca.incidents.approvals import tier_statement

    roots, hypotheses = hypothesis_tree(investigation, events.by_hypothesis)
    proposals = list(investigation.proposals.select_related("decided_by"))
    ceiling = proposals[0].max_allowed_tier if proposals else ""
    document = result_of(investigation)
    stored = document.to_json()
    context.update(
        {
            "sentence": outcome_sentence(document),
            "gate": stored["gate"],
            "clause": gate_clause(stored["gate"]),
            "tree": roots,
            "hypothesis_count": len(hypotheses),
            # The evidence lines themselves are in the timeline; the chain links to them.
            "chain": {**stored["chain"], "evidence": []},
            "chain_lines": events.validating,
            "calibrated": stored["outcome"].get("calibrated_probability"),
            "path": stored["path"],
            "ladder": ladder(investigation, ceiling),
            "statement": tier_statement(investigation),
            "proposals": proposals,
            "tier_labels": TIER_LABELS,
            "guidance": stored["guidance"],
            "applied_guidance": investigation.applied_guidance or None,
        }
    )
    context["similar"], context["similar_note"] = similar_incidents(incident, investigation)
    return context


def progress(incident: Incident) -> dict[str, Any]:
    """The latest investigation's progress, for the page's poller."""
    investigation = latest_investigation(incident)
    if investigation is None:
        return {"investigation": None, "status": None, "finished": True, "progress": {}}
    return {
        "investigation": investigation.pk,
        "status": investigation.status,
        "finished": investigation.status in FINISHED,
        "progress": {
            key: investigation.progress.get(key)
            for key in ("turn", "last_tool", "hypotheses")
            if isinstance(investigation.progress, dict) and key in investigation.progress
        },
    }
