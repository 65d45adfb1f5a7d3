"""Forms of the pages: list filters, the past-incident search, and a decision on an action."""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import Any

from django import forms
from typing_extensions import override

from rca.core.actions import ActionTier
from rca.incidents import listing
from rca.incidents.models import Incident


class IncidentFilterForm(forms.Form):
    """Filters and the sort of the incident list; unknown values are dropped, never an error page."""

    status = forms.ChoiceField(required=False, choices=[("", "any status"), *Incident.Status.choices])
    severity = forms.CharField(required=False, max_length=32)
    service = forms.CharField(required=False, max_length=255)
    q = forms.CharField(required=False, max_length=200, strip=True)
    assignee = forms.CharField(required=False, max_length=150)
    assigned = forms.ChoiceField(
        required=False, choices=[("", "anyone or nobody"), ("yes", "assigned"), ("no", "unassigned")]
    )
    tier = forms.ChoiceField(
        required=False, choices=[("", "any tier"), *((t.value, t.value) for t in ActionTier)]
    )
    sort = forms.ChoiceField(required=False, choices=[(key, key) for key in listing.SORT_CHOICES])

    FIELDS = ("status", "severity", "service", "q", "assignee", "assigned", "tier")

    def values(self) -> dict[str, str]:
        """The valid filters (empty strings for the rest)."""
        self.is_valid()  # an invalid field is left out of cleaned_data; the others still apply
        return {name: str(self.cleaned_data.get(name) or "") for name in self.FIELDS}

    def sort_key(self) -> str:
        """The valid sort key, else the default."""
        self.is_valid()
        return str(self.cleaned_data.get("sort") or listing.DEFAULT_SORT)

    def filters(self) -> listing.IncidentFilters:
        """The filters as the list query takes them."""
        v = self.values()
        return listing.IncidentFilters(
            status=v["status"],
            severity=v["severity"],
            service=v["service"],
            q=v["q"],
            assignee=v["assignee"],
            assigned={"yes": True, "no": False}.get(v["assigned"]),
            tier=v["tier"],
        )


class SearchForm(forms.Form):
    """The past-incident search: text plus filters on service, fault kind, tier and onset dates."""

    q = forms.CharField(required=False, max_length=500, strip=True, label="Text")
    service = forms.CharField(required=False, max_length=255)
    fault_kind = forms.CharField(required=False, max_length=64)
    tier = forms.ChoiceField(
        required=False, choices=[("", "any tier"), *((t.value, t.value) for t in ActionTier)]
    )
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    @override
    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since and until and until < since:
            self.add_error("until", "The end date is before the start date.")
        return data

    @staticmethod
    def day_start(value: Any) -> datetime | None:
        """A date as the start of that day in UTC (`until` is exclusive, so it is the day after's start)."""
        return datetime.combine(value, time.min, tzinfo=UTC) if value else None


class DecisionForm(forms.Form):
    """Approve or reject an action with a reason; the rules themselves live in rca.incidents.approvals."""

    decision = forms.ChoiceField(choices=[("approve", "approve"), ("reject", "reject")])
    # Not required here: rca.incidents.approvals refuses an empty reason itself, and audits the refusal.
    reason = forms.CharField(
        required=False, max_length=2000, strip=True, widget=forms.Textarea(attrs={"rows": 3})
    )
    tier = forms.ChoiceField(
        required=False, choices=[("", "as proposed"), *((t.value, t.value) for t in ActionTier)]
    )
