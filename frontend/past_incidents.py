"""Past incidents: the ones most like an incident (incident memory) and the search page (by meaning
from incident memory, else over the incident rows)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import OuterRef, Subquery

from rca.core.actions import ActionTier
from rca.incidents.models import Incident, Investigation

log = logging.getLogger(__name__)


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
