"""The incident timeline: one chronological list of everything that happened to an incident.

Assembled from the rows and the stored result documents, never the telemetry: the alerts as received,
each investigation (its turns with their tool calls and verdicts, the gate's decision, the
conclusion), the proposed actions, the decisions and executions on them and the workflow changes (from
the audit trail), and the comments. Each evidence line appears once, under the turn whose tool call
gathered it; other parts of the page link to it by its anchor instead of repeating it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.db.models import Q
from django.urls import reverse

from rca.incidents.comments import comments_of
from rca.incidents.models import ActionProposal, Alert, AuditEvent, Incident, Investigation
from rca.incidents.results import result_document
from rca.investigation.document import ResultDocument
from rca.investigation.narrative import outcome_sentence

# Only these schemes become links: an alert's annotations are sender-controlled text, and a
# `javascript:` URL in an href would run in the responder's session.
SAFE_SCHEMES = ("http", "https")
# Alerts shown one by one before the rest are counted: the incident page's earlier limit.
ALERTS_SHOWN = 20


@dataclass(frozen=True)
class Link:
    """A link shown on an entry (only http(s) addresses, see `safe_url`)."""

    label: str
    url: str


@dataclass(frozen=True)
class EvidenceLine:
    """One evidence item, shown once, under the turn that gathered it; `anchor` is its element id."""

    anchor: str
    tool: str
    source: str
    verdict: str
    summary: str
    validating: bool


@dataclass(frozen=True)
class ToolCall:
    """A tool the policy called in a turn, its verdict, and the evidence line it left: None when the
    sink dropped it (a model-inferred item); `repeated` when an earlier call left the same line (the
    page then links to it instead of repeating it)."""

    tool: str
    verdict: str
    evidence: EvidenceLine | None
    repeated: bool = False


@dataclass
class Entry:
    """One item of the timeline; `kind` picks its marker (alert, investigation, turn, gate,
    conclusion, proposal, decision, execution, workflow, comment)."""

    at: datetime
    kind: str
    title: str
    actor: str = ""
    text: str = ""
    anchor: str = ""
    links: list[Link] = field(default_factory=list)
    chips: list[tuple[str, str]] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    evidence: list[EvidenceLine] = field(default_factory=list)


@dataclass(frozen=True)
class Timeline:
    """The entries, oldest first; and, of the latest investigation with a result, its distinct
    validating evidence lines and each hypothesis's lines (the evidence chain and the hypothesis tree
    link to them instead of repeating them)."""

    entries: list[Entry]
    validating: list[EvidenceLine] = field(default_factory=list)
    by_hypothesis: dict[str, list[EvidenceLine]] = field(default_factory=dict)


def safe_url(value: object) -> str:
    """`value` when it is an absolute http(s) address, else ""."""
    text = str(value or "").strip()
    parts = urlsplit(text)
    return text if parts.scheme.lower() in SAFE_SCHEMES and parts.netloc else ""


def timeline(incident: Incident) -> Timeline:
    """Everything that happened to `incident`, oldest first."""
    investigations = list(incident.investigations.order_by("created_at", "pk"))
    proposals = list(
        ActionProposal.objects.filter(investigation__incident=incident).order_by("created_at", "pk")
    )
    entries = _alerts(incident)
    latest: _Lines | None = None
    for investigation in investigations:
        made, lines = _investigation(investigation)
        entries += made
        latest = lines or latest  # the page's chain and tree are the latest result's
    entries += [_proposal(p) for p in proposals]
    entries += _audited(incident, investigations, proposals)
    entries += [
        Entry(
            at=c.created_at,
            kind="comment",
            title="Comment",
            actor=c.author.get_username(),
            text=c.body,
            anchor=f"comment-{c.pk}",
        )
        for c in comments_of(incident)
    ]
    # A stable sort: entries of one investigation made at the same instant keep their logical order.
    entries.sort(key=lambda e: e.at)
    if latest is None:
        return Timeline(entries)
    return Timeline(entries, [line for line in latest.distinct if line.validating], latest.by_hypothesis)


# --- alerts --------------------------------------------------------------------------------------------


def _alerts(incident: Incident) -> list[Entry]:
    """The first ALERTS_SHOWN alerts as received, then one entry saying how many more came (an alert
    storm groups thousands into one incident; the API pages through all of them)."""
    alerts = incident.alerts.order_by("received_at", "pk")
    entries = [_alert(a) for a in alerts[:ALERTS_SHOWN]]
    more = alerts.count() - len(entries) if len(entries) == ALERTS_SHOWN else 0
    last = alerts.last() if more else None
    if last is not None:
        entries.append(
            Entry(
                at=last.received_at,
                kind="alert",
                title=f"{more} more alert{'s' if more > 1 else ''} received, the last one now",
                links=[Link("all alerts (API)", f"/api/v1/incidents/{incident.pk}/alerts/")],
            )
        )
    return entries


def _alert(alert: Alert) -> Entry:
    annotations = alert.annotations if isinstance(alert.annotations, Mapping) else {}
    name = alert.labels.get("alertname") or alert.fingerprint
    text = str(annotations.get("description") or annotations.get("summary") or "")
    links = []
    if runbook := safe_url(annotations.get("runbook_url")):
        links.append(Link("runbook", runbook))
    if source := safe_url(alert.generator_url):
        links.append(Link("alert source", source))
    return Entry(
        at=alert.received_at,
        kind="alert",
        title=f"Alert received: {name} ({alert.status}, firing since {alert.starts_at:%Y-%m-%d %H:%M:%S})",
        actor=alert.get_source_display(),
        text=text,
        anchor=f"alert-{alert.pk}",
        links=links,
        chips=[(str(k), str(v)) for k, v in alert.labels.items()],
    )


# --- investigations ------------------------------------------------------------------------------------


def _investigation(investigation: Investigation) -> tuple[list[Entry], _Lines | None]:
    """The entries of one investigation, and its evidence lines (None before it has a result)."""
    started = investigation.started_at or investigation.created_at
    entries = [
        Entry(
            at=investigation.created_at,
            kind="investigation",
            title=f"Investigation {investigation.pk} queued ({investigation.get_policy_display()} policy)",
        )
    ]
    if investigation.started_at:
        entries.append(
            Entry(at=started, kind="investigation", title=f"Investigation {investigation.pk} started")
        )
    ended = investigation.finished_at or started
    if investigation.status == Investigation.Status.FAILED:
        entries.append(
            Entry(
                at=ended,
                kind="investigation",
                title=f"Investigation {investigation.pk} failed",
                text=investigation.error,
            )
        )
        return entries, None
    document = result_document(investigation)
    if document is None:
        return entries, None
    lines = _Lines.of(investigation.pk, document)
    entries += _turns(started, document, lines)
    entries += _conclusion(ended, investigation, document)
    return entries, lines


@dataclass
class _Lines:
    """An investigation's evidence lines. Records with the same line (one check recorded on a
    service's hypothesis and again on a finer one) share one line and its anchor, so it is shown once."""

    distinct: list[EvidenceLine]
    # Per hypothesis, in the order the sink accepted them: (tool, line), consumed by the turns.
    queues: dict[str, deque[tuple[str, EvidenceLine]]]
    by_hypothesis: dict[str, list[EvidenceLine]]

    @classmethod
    def of(cls, investigation_pk: int, document: ResultDocument) -> _Lines:
        validating = {e.line for e in document.chain.evidence}
        first: dict[tuple[str, str, str], EvidenceLine] = {}
        queues: dict[str, deque[tuple[str, EvidenceLine]]] = {}
        for h in document.hypotheses:
            for e in h.evidence:
                line = first.setdefault(
                    e.line,
                    EvidenceLine(
                        anchor=f"ev-{investigation_pk}-{len(first)}",
                        tool=e.tool,
                        source=e.source,
                        verdict=e.verdict,
                        summary=e.summary,
                        validating=e.line in validating,
                    ),
                )
                queues.setdefault(h.id, deque()).append((e.tool, line))
        by_hypothesis = {h: [line for _, line in queue] for h, queue in queues.items()}
        return cls(list(first.values()), queues, by_hypothesis)

    def take(self, hypothesis: str, tool: str) -> EvidenceLine | None:
        """The first not yet claimed line of `hypothesis` left by `tool`."""
        queue = self.queues.get(hypothesis, deque())
        for index, (name, line) in enumerate(queue):
            if name == tool:
                del queue[index]
                return line
        return None

    def unclaimed(self) -> list[EvidenceLine]:
        """Lines no turn claimed, each once."""
        rest = {line.anchor: line for queue in self.queues.values() for _, line in queue}
        return list(rest.values())


def _turns(at: datetime, document: ResultDocument, lines: _Lines) -> list[Entry]:
    """One entry per examination step: the hypothesis, the tool calls and their verdicts, the belief.
    Evidence no step claims (a document rebuilt from rows has no steps) follows in one entry."""
    about = {h.id: h for h in document.hypotheses}
    shown: set[str] = set()
    entries = []
    for step in document.steps:
        hypothesis = about.get(step.hypothesis)
        what = f"{step.entity} {hypothesis.fault_kind}".strip() if hypothesis else step.entity
        calls = []
        for tool, verdict in zip(step.tools, step.verdicts, strict=False):
            line = lines.take(step.hypothesis, tool)
            first = line is not None and line.anchor not in shown
            calls.append(ToolCall(tool, verdict, line, repeated=line is not None and not first))
            if line is not None:
                shown.add(line.anchor)
        belief = step.belief.replace("_", " ")
        entries.append(
            Entry(
                at=at,
                kind="turn",
                title=f"Turn {step.turn}: examined {what.replace('_', ' ')} ({belief})",
                text=step.rationale,
                calls=calls,
            )
        )
    unclaimed = [line for line in lines.unclaimed() if line.anchor not in shown]
    if unclaimed:
        entries.append(
            Entry(
                at=at,
                kind="turn",
                title="Evidence gathered (the turn that gathered it was not recorded)",
                evidence=unclaimed,
            )
        )
    return entries


def _conclusion(at: datetime, investigation: Investigation, document: ResultDocument) -> list[Entry]:
    gate = document.gate
    clause = f"clause {gate.clause}: " if gate.clause not in (None, "") else ""
    gate_entry = Entry(
        at=at,
        kind="gate",
        title=f"Gate: {gate.state.replace('_', ' ') or 'decided'} ({gate.exit.replace('_', ' ')})",
        text=f"{clause}{gate.reason}".strip(),
        chips=[("validated", str(gate.validated_count)), ("mode", gate.mode or "active")],
    )
    outcome = document.outcome
    chips = [
        ("tier", (outcome.tier or investigation.tier).replace("_", " ")),
        ("grounding", (outcome.grounding or investigation.grounding or "ungrounded").replace("_", " ")),
    ]
    if outcome.capped_confidence is not None:
        chips.append(("capped confidence", f"{outcome.capped_confidence:.2f}"))
    conclusion = Entry(
        at=at,
        kind="conclusion",
        title=f"Investigation {investigation.pk} concluded",
        text=outcome_sentence(document),
        chips=chips,
        links=[Link("explore the graph", reverse("frontend:explorer", args=[investigation.incident_id]))],
    )
    return [gate_entry, conclusion]


# --- actions and the audit trail -------------------------------------------------------------------------


def _proposal(proposal: ActionProposal) -> Entry:
    return Entry(
        at=proposal.created_at,
        kind="proposal",
        title=f"Action proposed: {proposal.title}",
        actor="investigation",
        chips=[("tier", proposal.tier.replace("_", " "))],
        links=[Link("review the action", reverse("frontend:action", args=[proposal.pk]))],
        anchor=f"action-{proposal.pk}",
    )


def _audited(
    incident: Incident, investigations: Sequence[Investigation], proposals: Sequence[ActionProposal]
) -> list[Entry]:
    """Entries from the audit trail: decisions, executions, re-runs and workflow changes. Refusals, and
    events the rows above already show (queued, finished, commented), are left to the audit pages."""
    targets = (
        (Incident._meta.label_lower, [str(incident.pk)]),
        (Investigation._meta.label_lower, [str(i.pk) for i in investigations]),
        (ActionProposal._meta.label_lower, [str(p.pk) for p in proposals]),
    )
    about = Q()
    for target_type, ids in targets:
        about |= Q(target_type=target_type, target_id__in=ids)
    by_pk = {str(p.pk): p for p in proposals}
    return [
        _VERBS[event.verb](event, by_pk.get(event.target_id))
        for event in AuditEvent.objects.filter(about, verb__in=list(_VERBS)).order_by("at", "id")
    ]


def _event(event: AuditEvent, kind: str, title: str, text: str = "", links: Sequence[Link] = ()) -> Entry:
    return Entry(at=event.at, kind=kind, title=title, actor=event.actor_label, text=text, links=list(links))


def _detail(event: AuditEvent, name: str) -> str:
    detail: Any = event.detail if isinstance(event.detail, Mapping) else {}
    value = detail.get(name)
    return "" if value is None else str(value)


def _action_link(proposal: ActionProposal | None) -> list[Link]:
    return [Link("the action", reverse("frontend:action", args=[proposal.pk]))] if proposal else []


def _approved(event: AuditEvent, proposal: ActionProposal | None) -> Entry:
    tier = _detail(event, "tier").replace("_", " ")
    reason = _detail(event, "reason")
    return _event(event, "decision", f"Action approved at tier {tier}", reason, _action_link(proposal))


def _rejected(event: AuditEvent, proposal: ActionProposal | None) -> Entry:
    return _event(event, "decision", "Action rejected", _detail(event, "reason"), _action_link(proposal))


def _superseded(event: AuditEvent, proposal: ActionProposal | None) -> Entry:
    return _event(
        event,
        "decision",
        f"Action superseded by investigation {_detail(event, 'by_investigation')}",
        links=_action_link(proposal),
    )


def _execution(event: AuditEvent, proposal: ActionProposal | None) -> Entry:
    """An execution step; a finished one links its artifact (the issue or pull request) or, for a
    patch, the action page that shows the diff."""
    links = _action_link(proposal)
    if url := safe_url(_detail(event, "url")):
        links.insert(0, Link(f"the {_detail(event, 'kind').replace('_', ' ') or 'artifact'}", url))
    titles = {
        "action.execution_queued": "Execution queued",
        "action.execution_pending": "Execution pending (no executor in this process)",
        "action.execution_succeeded": f"Executed: {_detail(event, 'kind').replace('_', ' ')}",
        "action.execution_failed": "Execution failed"
        + (" (will retry)" if _detail(event, "retrying") == "True" else ""),
    }
    # A dry run records "(dry run: nothing was sent)" where the address would be.
    shown_url = "" if safe_url(_detail(event, "url")) else _detail(event, "url")
    text = _detail(event, "reason") or shown_url
    return _event(event, "execution", titles[event.verb], text, links)


def _rerun(event: AuditEvent, proposal: ActionProposal | None) -> Entry:
    how = " applying its recovery guidance" if _detail(event, "apply_guidance") == "True" else ""
    new = _detail(event, "new_investigation")
    return _event(event, "investigation", f"Re-run requested{how}: investigation {new}")


def _workflow(event: AuditEvent, proposal: ActionProposal | None) -> Entry:
    verb = event.verb.removeprefix("incident.")
    if verb == "assigned":
        to = _detail(event, "to")
        title = f"Assigned to {to}" if to else f"Unassigned (was {_detail(event, 'from')})"
    else:
        title = verb.capitalize()
    # Intake resolves an incident when its alerts resolve, and says so in `reason`.
    text = _detail(event, "note") or ("" if event.actor_id else _detail(event, "reason"))
    return _event(event, "workflow", title, text)


_VERBS = {
    "action.approved": _approved,
    "action.rejected": _rejected,
    "action.superseded": _superseded,
    "action.execution_queued": _execution,
    "action.execution_pending": _execution,
    "action.execution_succeeded": _execution,
    "action.execution_failed": _execution,
    "investigation.rerun_requested": _rerun,
    "incident.acknowledged": _workflow,
    "incident.assigned": _workflow,
    "incident.resolved": _workflow,
    "incident.reopened": _workflow,
}
