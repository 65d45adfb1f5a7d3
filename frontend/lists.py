"""What the list pages show: the incident list (its filter choices and sortable column headers) and
the approval inbox (actions awaiting a decision, with who may decide)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet
from django.http import QueryDict

from rca.core.actions import ActionTier
from rca.incidents.approvals import Role, allowed_tier, has_role
from rca.incidents.models import ActionProposal, Incident
from rca.incidents.workflow import assignable_users

# The incident list's columns: (sort key or "" when the column does not sort, header).
INCIDENT_COLUMNS = (
    ("id", "#"),
    ("title", "Incident"),
    ("status", "Status"),
    ("assignee", "Assignee"),
    ("severity", "Severity"),
    ("service", "Service"),
    ("onset", "Onset"),
    ("confidence", "Confidence"),
    ("tier", "Tier"),
    ("", "Root cause"),
)


@dataclass(frozen=True)
class Header:
    """A column header; a sortable one links to the list sorted by it (again: the other way round)."""

    label: str
    href: str
    aria_sort: str  # "ascending", "descending" or "none" (WAI-ARIA), "" for a column that does not sort
    arrow: str


def filter_options() -> dict[str, list[str]]:
    """Choices for the list filters: the statuses and tiers, the severities and services that occur,
    and who may own an incident."""

    def distinct(name: str) -> list[str]:
        values = Incident.objects.exclude(**{name: ""}).values_list(name, flat=True).distinct()
        return sorted(values.order_by())

    return {
        "statuses": [s.value for s in Incident.Status],
        "severities": distinct("severity"),
        "services": distinct("symptom_entity"),
        "assignees": list(assignable_users().values_list("username", flat=True)),
        "tiers": [t.value for t in ActionTier],
    }


def headers(query: QueryDict, sort: str) -> list[Header]:
    """The incident list's headers; `query` is the page's query string (filters kept, page dropped)."""
    current = sort.lstrip("-")
    descending = sort.startswith("-")
    out = []
    for key, label in INCIDENT_COLUMNS:
        if not key:
            out.append(Header(label, "", "", ""))
            continue
        target, aria, arrow = key, "none", ""
        if key == current and descending:
            target, aria, arrow = key, "descending", "▼"
        elif key == current:
            target, aria, arrow = f"-{key}", "ascending", "▲"
        params = query.copy()
        params.pop("page", None)
        params["sort"] = target
        out.append(Header(label, f"?{params.urlencode()}", aria, arrow))
    return out


# --- the approval inbox --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Awaiting:
    """An action awaiting a decision, with what the evidence allows and whether the viewer may decide."""

    proposal: ActionProposal
    incident: Incident
    allowed: str
    confidence: float | None
    may_approve: bool
    may_reject: bool


def waiting() -> QuerySet[ActionProposal]:
    """Actions awaiting a decision (proposed: neither decided nor superseded), newest first."""
    return (
        ActionProposal.objects.filter(status=ActionProposal.Status.PROPOSED)
        .select_related("investigation__incident")
        .order_by("-created_at", "-pk")
    )


def awaiting(proposals: Iterable[ActionProposal], user: Any) -> list[Awaiting]:
    """`proposals` with the tier the evidence allows, the confidence, and what `user` may do."""
    is_approver, is_responder = has_role(user, Role.APPROVER), has_role(user, Role.RESPONDER)
    return [
        Awaiting(
            proposal=p,
            incident=p.investigation.incident,
            allowed=allowed_tier(p).value,
            confidence=p.investigation.capped_confidence,
            may_approve=is_approver,
            may_reject=is_responder,
        )
        for p in proposals
    ]


def approvers() -> list[str]:
    """User names of the active approvers (the approver role, or a superuser)."""
    users = get_user_model().objects.filter(
        Q(is_superuser=True) | Q(groups__name=Role.APPROVER.value), is_active=True
    )
    return sorted(set(users.values_list("username", flat=True)))
