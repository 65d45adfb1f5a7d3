"""What the pages show, assembled from the relational rows and the stored result document (never the
telemetry: the explorer draws what the tools recorded during the run).

Views stay thin: they parse the request, call one function here and render. Everything here reads;
decisions on actions go through `rca.incidents.approvals`, which enforces the rules on the server.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.db.models import OuterRef, QuerySet, Subquery

from frontend import figures
from rca.core.actions import ISSUE_AT, PATCH_AT, PULL_REQUEST_AT, ActionTier
from rca.incidents.models import ActionProposal, AuditEvent, Evidence, Hypothesis, Incident, Investigation
from rca.incidents.results import result_document
from rca.investigation.document import ResultDocument
from rca.investigation.narrative import outcome_sentence
from rca.telemetry.model import MetricSeries

log = logging.getLogger(__name__)

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
FINISHED = (Investigation.Status.SUCCEEDED, Investigation.Status.FAILED)


# --- incident list -------------------------------------------------------------------------------------


def _latest(field_name: str) -> Subquery:
    latest = Investigation.objects.filter(incident=OuterRef("pk")).order_by("-created_at", "-pk")
    return Subquery(latest.values(field_name)[:1])


def incident_list(
    *, status: str = "", severity: str = "", service: str = "", q: str = ""
) -> QuerySet[Incident]:
    """Incidents, newest first, filtered, each annotated with its latest investigation's verdict."""
    rows = Incident.objects.all()
    if status:
        rows = rows.filter(status=status)
    if severity:
        rows = rows.filter(severity=severity)
    if service:
        rows = rows.filter(symptom_entity=service)
    if q:
        rows = rows.filter(title__icontains=q)
    return rows.annotate(
        latest_status=_latest("status"),
        latest_tier=_latest("tier"),
        latest_exit=_latest("exit"),
        latest_root=_latest("root_cause_entity"),
    ).order_by("-created_at", "-pk")


def filter_options() -> dict[str, list[str]]:
    """Choices for the list filters: the statuses, and the severities and services that occur."""

    def distinct(name: str) -> list[str]:
        values = Incident.objects.exclude(**{name: ""}).values_list(name, flat=True).distinct()
        return sorted(values.order_by())

    return {
        "statuses": [s.value for s in Incident.Status],
        "severities": distinct("severity"),
        "services": distinct("symptom_entity"),
    }


# --- incident detail -----------------------------------------------------------------------------------


def latest_investigation(incident: Incident) -> Investigation | None:
    """The incident's most recent investigation (queued, running or finished)."""
    return incident.investigations.order_by("-created_at", "-pk").first()


@dataclass
class HypothesisNode:
    """A hypothesis with its evidence and its children (by parent_key), for the tree."""

    hypothesis: Hypothesis
    evidence: list[Evidence]
    children: list[HypothesisNode] = field(default_factory=list)


def hypothesis_tree(investigation: Investigation) -> tuple[list[HypothesisNode], list[Hypothesis]]:
    """Roots of the hypothesis tree in rank order (an orphan, whose parent is unknown, is a root too)."""
    hypotheses = list(investigation.hypotheses.order_by("rank", "key").prefetch_related("evidence"))
    nodes = {h.key: HypothesisNode(h, list(h.evidence.all())) for h in hypotheses}
    roots: list[HypothesisNode] = []
    for h in hypotheses:
        parent = nodes.get(h.parent_key) if h.parent_key and h.parent_key != h.key else None
        (parent.children if parent else roots).append(nodes[h.key])
    return roots, hypotheses


@dataclass(frozen=True)
class Rung:
    """One rung of the action ladder, with where it starts on the 0..1 confidence scale."""

    tier: str
    label: str
    start: float
    end: float
    current: bool
    allowed: bool

    @property
    def x(self) -> str:
        """Left edge as an SVG percentage (attributes, not style: the CSP allows them)."""
        return f"{self.start * 100:.1f}%"

    @property
    def width(self) -> str:
        """Width as an SVG percentage."""
        return f"{(self.end - self.start) * 100:.1f}%"

    @property
    def mid(self) -> str:
        """Centre as an SVG percentage (for the label)."""
        return f"{(self.start + self.end) * 50:.1f}%"


@dataclass(frozen=True)
class Ladder:
    """The action ladder notify < issue (0.40) < patch (0.65) < pull request (0.85), with markers."""

    rungs: tuple[Rung, ...]
    raw: float | None
    capped: float | None
    tier: str
    ceiling: str

    @staticmethod
    def percent(value: float | None) -> str:
        """A confidence as an SVG x percentage, clamped to the bar."""
        return f"{min(max(value or 0.0, 0.0), 1.0) * 100:.1f}%"

    @property
    def raw_x(self) -> str:
        """Where the raw confidence sits."""
        return self.percent(self.raw)

    @property
    def capped_x(self) -> str:
        """Where the capped confidence sits."""
        return self.percent(self.capped)


def ladder(investigation: Investigation, ceiling: str = "") -> Ladder:
    """The ladder for an investigation: its tier highlighted, rungs above `ceiling` marked not allowed."""
    bounds = (
        (ActionTier.NOTIFY, 0.0, ISSUE_AT),
        (ActionTier.ISSUE, ISSUE_AT, PATCH_AT),
        (ActionTier.PATCH, PATCH_AT, PULL_REQUEST_AT),
        (ActionTier.PULL_REQUEST, PULL_REQUEST_AT, 1.0),
    )
    top = ActionTier(ceiling) if ceiling else None
    rungs = tuple(
        Rung(
            tier=t.value,
            label="PR" if t is ActionTier.PULL_REQUEST else TIER_LABELS[t.value],  # the narrowest rung
            start=start,
            end=end,
            current=t.value == investigation.tier,
            allowed=top is None or top.allows(t),
        )
        for t, start, end in bounds
    )
    return Ladder(
        rungs, investigation.raw_confidence, investigation.capped_confidence, investigation.tier, ceiling
    )


def gate_clause(gate: Mapping[str, Any]) -> str:
    """The gate's clause in words (the stored value is the clause number)."""
    clause = gate.get("clause")
    try:
        return f"clause {int(clause)}: {GATE_CLAUSES[int(clause)]}"  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError):
        return str(clause or "")


def detail(incident: Incident) -> dict[str, Any]:
    """Everything the incident page shows, as template context."""
    investigation = latest_investigation(incident)
    context: dict[str, Any] = {
        "incident": incident,
        "alerts": list(incident.alerts.all()[:20]),
        "investigation": investigation,
        "attempts": incident.investigations.count(),
        "running": investigation is not None and investigation.status not in FINISHED,
    }
    if investigation is None or investigation.status != Investigation.Status.SUCCEEDED:
        return context
    from rca.incidents.approvals import tier_statement

    roots, hypotheses = hypothesis_tree(investigation)
    proposals = list(investigation.proposals.select_related("decided_by"))
    ceiling = proposals[0].max_allowed_tier if proposals else ""
    document = _document(investigation)
    stored = document.to_json()
    context.update(
        {
            "sentence": outcome_sentence(document),
            "gate": stored["gate"],
            "clause": gate_clause(stored["gate"]),
            "tree": roots,
            "hypothesis_count": len(hypotheses),
            "chain": stored["chain"],
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


def _document(investigation: Investigation) -> ResultDocument:
    """The result document of a succeeded investigation."""
    document = result_document(investigation)
    if document is None:
        raise ValueError(f"investigation {investigation.pk} has no result yet")
    return document


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


# --- incident memory -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PastIncident:
    """One search or similarity result, linked to its incident row."""

    incident_id: int
    title: str
    status: str
    score: float | None
    symptom: str
    root_cause: str
    fault_kind: str
    tier: str
    exit: str
    onset: datetime | None
    evidence: tuple[str, ...] = ()


def similar_incidents(incident: Incident, investigation: Investigation) -> tuple[list[PastIncident], str]:
    """Up to five past incidents most like this one, from incident memory; or a note why there are none."""
    from rca.memory import index
    from rca.memory.documents import document_for

    try:
        hits = index.search(
            document_for(incident, investigation).text(),
            index.SearchFilters(exclude_incident=incident.pk),
            limit=5,
        )
    except index.MemoryUnavailable as exc:
        log.warning("similar incidents: %s", exc)
        return [], "Incident memory is unavailable right now, so similar past incidents can't be shown."
    results = _past(hits)
    return results, "" if results else "No similar incidents."


def _past(hits: Sequence[Any]) -> list[PastIncident]:
    """Memory hits joined to the incident rows; a hit whose incident is gone is dropped."""
    statuses = dict(Incident.objects.filter(pk__in=[h.incident_id for h in hits]).values_list("pk", "status"))
    return [
        PastIncident(
            incident_id=h.incident_id,
            title=h.document.title,
            status=statuses[h.incident_id],
            score=h.score,
            symptom=h.document.symptom_entity,
            root_cause=h.document.root_cause_entity,
            fault_kind=h.document.fault_kind,
            tier=h.document.tier,
            exit=h.document.exit,
            onset=h.document.onset,
            evidence=tuple(h.document.evidence[:2]),
        )
        for h in hits
        if h.incident_id in statuses
    ]


@dataclass(frozen=True)
class SearchQuery:
    """The past-incident search form, already validated."""

    q: str = ""
    service: str = ""
    fault_kind: str = ""
    tier: str = ""
    since: datetime | None = None
    until: datetime | None = None

    @property
    def empty(self) -> bool:
        """Nothing asked yet."""
        return not (self.q or self.service or self.fault_kind or self.tier or self.since or self.until)


def search(query: SearchQuery, limit: int = 20) -> tuple[list[PastIncident], str]:
    """Past incidents matching `query`: by meaning from incident memory when there is text, else (and
    when memory is unavailable) from the incident rows; the note says which."""
    from rca.memory import index

    if query.q:
        try:
            hits = index.search(
                query.q,
                index.SearchFilters(
                    service=query.service or None,
                    fault_kind=query.fault_kind or None,
                    tier=query.tier or None,
                    since=query.since,
                    until=query.until,
                ),
                limit=limit,
            )
            return _past(hits), ""
        except index.MemoryUnavailable as exc:
            log.warning("search: %s", exc)
            note = "Incident memory is unavailable: showing incidents whose title contains the text instead."
            return _relational(query, limit), note
    return _relational(query, limit), ""


def _relational(query: SearchQuery, limit: int) -> list[PastIncident]:
    """The same filters over the relational rows (latest succeeded investigation of each incident)."""
    from django.db.models import Q

    done = Investigation.objects.filter(
        incident=OuterRef("pk"), status=Investigation.Status.SUCCEEDED
    ).order_by("-created_at", "-pk")

    def latest(name: str) -> Subquery:
        return Subquery(done.values(name)[:1])

    rows = Incident.objects.annotate(
        root=latest("root_cause_entity"),
        kind=latest("root_cause_kind"),
        tier=latest("tier"),
        exit=latest("exit"),
    )
    if query.q:
        rows = rows.filter(title__icontains=query.q)
    if query.service:
        rows = rows.filter(Q(symptom_entity=query.service) | Q(root=query.service))
    if query.fault_kind:
        rows = rows.filter(kind=query.fault_kind)
    if query.tier:
        rows = rows.filter(tier=query.tier)
    if query.since:
        rows = rows.filter(onset__gte=query.since)
    if query.until:
        rows = rows.filter(onset__lt=query.until)
    return [
        PastIncident(
            incident_id=r.pk,
            title=r.title,
            status=r.status,
            score=None,
            symptom=r.symptom_entity,
            root_cause=r.root or "",
            fault_kind=r.kind or "",
            tier=r.tier or "",
            exit=r.exit or "",
            onset=r.onset,
        )
        for r in rows.order_by("-onset", "-pk")[:limit]
    ]


def search_options() -> dict[str, list[str]]:
    """Choices for the search filters: services and fault kinds that occur, and the tiers."""
    services = set(
        Incident.objects.exclude(symptom_entity="").values_list("symptom_entity", flat=True).distinct()
    )
    services |= set(
        Investigation.objects.exclude(root_cause_entity="")
        .values_list("root_cause_entity", flat=True)
        .distinct()
    )
    kinds = (
        Investigation.objects.exclude(root_cause_kind="").values_list("root_cause_kind", flat=True).distinct()
    )
    return {
        "services": sorted(services),
        "fault_kinds": sorted(set(kinds)),
        "tiers": [t.value for t in ActionTier],
    }


# --- action review -------------------------------------------------------------------------------------


def action_review(proposal: ActionProposal, user: Any) -> dict[str, Any]:
    """The proposal, its evidence, what the user may do with it, and its audit trail."""
    from rca.actions.preview import preview, why_not_buildable
    from rca.incidents.approvals import Role, allowed_tier, has_role, tier_statement

    investigation = proposal.investigation
    ceiling = allowed_tier(proposal)
    proposed = ActionTier(proposal.tier)
    undecided = proposal.status == ActionProposal.Status.PROPOSED
    is_approver = has_role(user, Role.APPROVER)
    is_responder = has_role(user, Role.RESPONDER)
    # Why each tier the evidence allows cannot be built (checked without sending anything); notify
    # always can. The preview is of the highest tier allowed: what it would send, or what it lacks.
    unbuildable = {
        t: why_not_buildable(proposal, t) if undecided else None for t in ActionTier if ceiling.allows(t)
    }
    buildable = [t for t, why in unbuildable.items() if why is None]
    would = preview(proposal, ceiling) if undecided else None
    if would is not None and not would.buildable and ceiling in buildable:
        # What the repository holds rules it out (a manifest with nothing to change, say).
        unbuildable[ceiling] = would.reason
        buildable.remove(ceiling)
    selected = buildable[-1] if buildable else ActionTier.NOTIFY
    if not undecided:
        approve_block = f"This action was already {proposal.status}."
    elif not is_approver:
        approve_block = "Only an approver may approve an action."
    elif unbuildable.get(ceiling):
        approve_block = (
            f"Approving as {TIER_LABELS[ceiling.value]} is disabled: it cannot be built "
            f"({unbuildable[ceiling]})."
        )
    else:
        approve_block = ""
    trail = AuditEvent.objects.filter(
        target_type=ActionProposal._meta.label_lower, target_id=str(proposal.pk)
    ).order_by("-at", "-id")
    stored = document.to_json() if (document := result_document(investigation)) else {}
    return {
        "proposal": proposal,
        "investigation": investigation,
        "incident": investigation.incident,
        "ceiling": ceiling.value,
        "above_ceiling": not ceiling.allows(proposed),
        "tiers": [
            {
                "value": t.value,
                "label": TIER_LABELS[t.value],
                "allowed": ceiling.allows(t) and unbuildable.get(t) is None,
                "why_not": (
                    "above what the evidence allows"
                    if not ceiling.allows(t)
                    else f"cannot be built: {unbuildable[t]}"
                    if unbuildable.get(t)
                    else ""
                ),
                "default": t == selected,
            }
            for t in ActionTier
        ],
        "statement": tier_statement(investigation),
        "preview": would,
        "can_approve": undecided and is_approver,
        "approve_block": approve_block,
        "can_reject": undecided and is_responder,
        "reject_block": ""
        if undecided and is_responder
        else (
            f"This action was already {proposal.status}."
            if not undecided
            else "Only a responder or approver may reject."
        ),
        "chain": stored.get("chain") or {},
        "path": stored.get("path") or [],
        "ladder": ladder(investigation, ceiling.value),
        "trail": list(trail[:100]),
        "tier_labels": TIER_LABELS,
    }


# --- explorer ------------------------------------------------------------------------------------------

TIMELINE_MAX_ENTITIES = 4


def explorer(incident: Incident, investigation: Investigation) -> dict[str, Any]:
    """The explorer's two figures (as JSON) and notes on whatever could not be drawn, from the stored
    result document: the graph the engine saw and the series its tools examined."""
    document = _document(investigation)
    facts = document.facts
    notes: list[str] = []
    hops = [figures.Hop.from_stored(h) for h in document.to_json()["path"]]
    edges = [(e.caller, e.callee) for e in facts.topology.edges]
    if not facts.topology.entities:
        notes.append("The service topology was not recorded with this investigation; only the path is drawn.")
    graph = figures.graph_figure(
        entities=[*document.beliefs, *(e.name for e in facts.topology.entities)],
        edges=edges,
        beliefs=document.beliefs,
        path=hops,
        symptom=incident.symptom_entity,
        root_cause=investigation.root_cause_entity,
        candidates=[c.model_dump() for c in document.candidates],
    )
    on_path = document.route()[:TIMELINE_MAX_ENTITIES]
    series: dict[str, list[MetricSeries]] = {name: [] for name in on_path}
    baselines: dict[tuple[str, str, str | None], figures.Baseline] = {}
    for s in facts.series:
        if s.entity in series:
            series[s.entity].append(
                MetricSeries(
                    s.entity, s.metric, s.unit, np.array(s.timestamps), np.array(s.values), s.instance
                )
            )
            baselines[(s.entity, s.metric, s.instance)] = figures.Baseline(s.baseline, s.spread)
    timeline: dict[str, Any] | None = None
    if any(series.values()):
        onset = incident.onset.timestamp()
        timeline = figures.to_json(
            figures.timeline_figure(
                series, onset, baselines=baselines, detected_onset=_detected_onset(document)
            )
        )
    elif on_path:
        notes.append("No examined metric series were recorded for the entities on the path.")
    return {
        "graph": figures.to_json(graph),
        "timeline": timeline,
        "notes": notes,
        "hops": hops,
        "timeline_entities": on_path,
    }


def _detected_onset(document: ResultDocument) -> float | None:
    """The anomaly onset the validating metrics evidence found, if it recorded one."""
    for item in document.chain.evidence:
        value = item.signals.get("m.onset")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None
