"""The incident list as the pages and the API show it: filtered, sorted by any column, each incident
annotated with its latest investigation's verdict (status, tier, confidence, root cause).

One query builder for both, so a filter or a sort means the same thing on the page and in the API.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Case, F, IntegerField, OrderBy, OuterRef, QuerySet, Subquery, Value, When

from rca.core.actions import ActionTier
from rca.incidents.intake import SEVERITY_RANK
from rca.incidents.models import Incident, Investigation

# Sort keys -> the column each sorts on; "-key" sorts descending. Severity and tier sort by rank, not
# by name; incidents without a value sort last either way.
SORT_COLUMNS = {
    "id": "pk",
    "title": "title",
    "status": "status",
    "assignee": "assignee__username",
    "severity": "severity_rank",
    "service": "symptom_entity",
    "onset": "onset",
    "created": "created_at",
    "confidence": "latest_confidence",
    "tier": "latest_tier_rank",
}
SORT_KEYS = tuple(SORT_COLUMNS)
SORT_CHOICES = tuple(key for name in SORT_KEYS for key in (name, f"-{name}"))
DEFAULT_SORT = "-created"


@dataclass(frozen=True)
class IncidentFilters:
    """What the list is narrowed to; empty values filter nothing. `assigned` is True (someone owns
    it), False (nobody does) or None (either)."""

    status: str = ""
    severity: str = ""
    service: str = ""
    source: str = ""
    q: str = ""
    assignee: str = ""
    assigned: bool | None = None
    tier: str = ""
    since: datetime | None = None
    until: datetime | None = None


def latest(field_name: str) -> Subquery:
    """`field_name` of the incident's most recent investigation (queued, running or finished)."""
    newest = Investigation.objects.filter(incident=OuterRef("pk")).order_by("-created_at", "-pk")
    return Subquery(newest.values(field_name)[:1])


def annotated(rows: QuerySet[Incident] | None = None) -> QuerySet[Incident]:
    """`rows` (default: all incidents) with the latest investigation's verdict and the sort ranks."""
    base = Incident.objects.all() if rows is None else rows
    severity = [When(severity__iexact=name, then=Value(rank)) for name, rank in SEVERITY_RANK.items()]
    tiers = [When(latest_tier=tier.value, then=Value(rank)) for rank, tier in enumerate(ActionTier)]
    return (
        base.select_related("assignee", "acknowledged_by")
        .annotate(
            latest_investigation_status=latest("status"),
            latest_tier=latest("tier"),
            latest_exit=latest("exit"),
            latest_root=latest("root_cause_entity"),
            latest_confidence=latest("capped_confidence"),
            severity_rank=Case(*severity, default=None, output_field=IntegerField()),
        )
        .annotate(latest_tier_rank=Case(*tiers, default=None, output_field=IntegerField()))
    )


def incidents(filters: IncidentFilters, sort: str = DEFAULT_SORT) -> QuerySet[Incident]:
    """The incidents `filters` lets through, sorted by `sort` (a key of SORT_CHOICES; an unknown one
    falls back to DEFAULT_SORT), ties broken newest first."""
    rows = annotated()
    exact = {
        "status": filters.status,
        "severity__iexact": filters.severity,
        "symptom_entity": filters.service,
        "source": filters.source,
        "title__icontains": filters.q,
        "assignee__username": filters.assignee,
        "latest_tier": filters.tier,
    }
    rows = rows.filter(**{lookup: value for lookup, value in exact.items() if value})
    if filters.assigned is not None:
        rows = rows.filter(assignee__isnull=not filters.assigned)
    if filters.since:
        rows = rows.filter(onset__gte=filters.since)
    if filters.until:
        rows = rows.filter(onset__lt=filters.until)
    return rows.order_by(order_by(sort), "-created_at", "-pk")


def order_by(sort: str) -> OrderBy:
    """The ORDER BY term of a sort key, nulls last in both directions."""
    key = sort if sort in SORT_CHOICES else DEFAULT_SORT
    column = F(SORT_COLUMNS[key.lstrip("-")])
    return column.desc(nulls_last=True) if key.startswith("-") else column.asc(nulls_last=True)
