"""Admin pages for incidents, alerts, investigations, their trees, proposals, comments and the audit
trail.

What intake or the engine recorded (raw payloads, the tree, the gate's verdict) is shown read-only:
the admin is for looking and for the few human decisions, not for rewriting evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from typing_extensions import override

from rca.incidents.models import (
    ActionProposal,
    Alert,
    AuditEvent,
    Comment,
    Evidence,
    Hypothesis,
    Incident,
    IntakeToken,
    Investigation,
)
from rca.incidents.tokens import issue_token

if TYPE_CHECKING:
    ModelAdmin = admin.ModelAdmin
    TabularInline = admin.TabularInline
else:
    # django-stubs declares the admin classes generic, Django does not: subscripting must be a no-op
    # here (django_stubs_ext.monkeypatch does this globally, but it is only a dev dependency).
    class ModelAdmin(admin.ModelAdmin):
        """Django's ModelAdmin, subscriptable like its stubs."""

        def __class_getitem__(cls, item):
            return cls

    class TabularInline(admin.TabularInline):
        """Django's TabularInline, subscriptable like its stubs."""

        def __class_getitem__(cls, item):
            return cls


def _all_fields(model: type[Any]) -> tuple[str, ...]:
    return tuple(f.name for f in model._meta.concrete_fields)


class AlertInline(TabularInline[Alert, Incident]):
    """An incident's alerts, read-only."""

    model = Alert
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ("fingerprint", "status", "starts_at", "ends_at", "received_at")
    readonly_fields = fields


class InvestigationInline(TabularInline[Investigation, Incident]):
    """An incident's investigations, read-only."""

    model = Investigation
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ("attempt_key", "policy", "status", "exit", "tier", "root_cause_entity", "created_at")
    readonly_fields = fields


@admin.register(Incident)
class IncidentAdmin(ModelAdmin[Incident]):
    """Incidents: listed, filtered and searched; their alerts and investigations inline."""

    list_display = ("id", "title", "status", "severity", "symptom_entity", "source", "onset", "created_at")
    list_filter = ("status", "source", "severity")
    search_fields = ("title", "symptom_entity", "fingerprint", "group_key")
    date_hierarchy = "created_at"
    readonly_fields = ("fingerprint", "group_key", "source", "recorded_case", "created_at", "updated_at")
    inlines = (AlertInline, InvestigationInline)


@admin.register(Alert)
class AlertAdmin(ModelAdmin[Alert]):
    """Alert episodes as received."""

    list_display = (
        "id",
        "incident",
        "source",
        "fingerprint",
        "status",
        "starts_at",
        "ends_at",
        "received_at",
    )
    list_filter = ("status", "source")
    search_fields = ("fingerprint", "incident__title")
    list_select_related = ("incident",)
    # Alerts are what a sender said; nobody edits them afterwards.
    readonly_fields = _all_fields(Alert)

    @override
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class HypothesisInline(TabularInline[Hypothesis, Investigation]):
    """An investigation's hypotheses, read-only."""

    model = Hypothesis
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ("rank", "key", "entity", "fault_kind", "parent_key", "state", "prior")
    readonly_fields = fields


class ProposalInline(TabularInline[ActionProposal, Investigation]):
    """An investigation's action proposals, read-only."""

    model = ActionProposal
    fk_name = "investigation"  # not `superseded_by`
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ("tier", "max_allowed_tier", "title", "status", "decided_by", "decided_at")
    readonly_fields = fields


@admin.register(Investigation)
class InvestigationAdmin(ModelAdmin[Investigation]):
    """Investigations: what each concluded, read-only."""

    list_display = (
        "id",
        "incident",
        "policy",
        "status",
        "exit",
        "capped_confidence",
        "grounding",
        "tier",
        "root_cause_entity",
        "created_at",
    )
    list_filter = ("status", "policy", "exit", "grounding", "tier", "outcome")
    search_fields = ("attempt_key", "root_cause_entity", "incident__title")
    list_select_related = ("incident",)
    # The engine's output and the core's verdicts: shown, never edited by hand.
    readonly_fields = _all_fields(Investigation)
    inlines = (HypothesisInline, ProposalInline)

    @override
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class EvidenceInline(TabularInline[Evidence, Hypothesis]):
    """A hypothesis's evidence, read-only."""

    model = Evidence
    extra = 0
    can_delete = False
    fields = ("seq", "tool", "target", "source", "verdict", "summary", "observed_at")
    readonly_fields = fields


@admin.register(Hypothesis)
class HypothesisAdmin(ModelAdmin[Hypothesis]):
    """Hypotheses and their evidence, read-only."""

    list_display = ("id", "investigation", "key", "entity", "fault_kind", "state", "prior", "rank")
    list_filter = ("state", "fault_kind")
    search_fields = ("key", "entity", "fault_kind")
    readonly_fields = _all_fields(Hypothesis)
    inlines = (EvidenceInline,)

    @override
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Evidence)
class EvidenceAdmin(ModelAdmin[Evidence]):
    """Evidence records, read-only: provenance is never edited."""

    list_display = ("id", "hypothesis", "seq", "tool", "source", "verdict", "summary", "observed_at")
    list_filter = ("source", "verdict", "tool")
    search_fields = ("summary", "tool", "target", "hypothesis__entity")
    readonly_fields = _all_fields(Evidence)

    @override
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(ActionProposal)
class ActionProposalAdmin(ModelAdmin[ActionProposal]):
    """Action proposals, read-only: decisions go through the review pages."""

    list_display = ("id", "investigation", "tier", "max_allowed_tier", "title", "status", "decided_by")
    list_filter = ("status", "tier")
    search_fields = ("title", "body", "reason")
    # Decisions go through the approval pages, which write the audit trail; here they are only shown.
    readonly_fields = _all_fields(ActionProposal)

    @override
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Comment)
class CommentAdmin(ModelAdmin[Comment]):
    """Responders' comments on incidents."""

    list_display = ("id", "incident", "author", "created_at")
    search_fields = ("body", "author__username", "incident__title")
    list_select_related = ("incident", "author")
    date_hierarchy = "created_at"
    readonly_fields = _all_fields(Comment)

    # Append-only: comments are added through rca.incidents.comments (which audits them), never edited.
    @override
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @override
    def has_change_permission(self, request: HttpRequest, obj: Comment | None = None) -> bool:
        return False

    @override
    def has_delete_permission(self, request: HttpRequest, obj: Comment | None = None) -> bool:
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ModelAdmin[AuditEvent]):
    """The audit trail, append-only: never added, changed or deleted here."""

    list_display = ("at", "actor_label", "verb", "target_type", "target_id")
    list_filter = ("verb", "target_type")
    search_fields = ("actor_label", "verb", "target_id")
    date_hierarchy = "at"
    readonly_fields = _all_fields(AuditEvent)

    # Append-only: the trail is written by code and can be read here, never added to, changed or deleted.
    @override
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @override
    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    @override
    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False


class NewIntakeTokenForm(forms.ModelForm):  # type: ignore[type-arg]  # not subscriptable at run time
    """A new intake token: its name, its webhook, and whether the sender may sign bodies."""

    with_hmac = forms.BooleanField(required=False, label="Also issue an HMAC secret to sign bodies with")

    class Meta:
        model = IntakeToken
        fields = ("name", "source")


@admin.register(IntakeToken)
class IntakeTokenAdmin(ModelAdmin[IntakeToken]):
    """Intake tokens: issued here (or by `manage.py create_intake_token`), shown once, then only their
    prefix; an admin deactivates one instead of deleting it, so a leaked token stops working at once."""

    list_display = ("name", "source", "prefix", "active", "created_at")
    list_filter = ("source", "active")
    search_fields = ("name", "prefix")

    @override
    def get_form(
        self, request: HttpRequest, obj: IntakeToken | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = NewIntakeTokenForm
        return super().get_form(request, obj, change, **kwargs)

    @override
    def get_fields(self, request: HttpRequest, obj: IntakeToken | None = None) -> Any:
        return ("name", "source", "with_hmac") if obj is None else ("name", "source", "prefix", "active")

    @override
    def get_readonly_fields(self, request: HttpRequest, obj: IntakeToken | None = None) -> Any:
        return () if obj is None else ("name", "source", "prefix")

    @override
    def save_model(self, request: HttpRequest, obj: IntakeToken, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        issued = issue_token(obj.name, obj.source, with_hmac=form.cleaned_data["with_hmac"])
        obj.pk = issued.record.pk
        obj.refresh_from_db()
        secret = f" HMAC secret: {issued.hmac_secret}" if issued.hmac_secret else ""
        messages.warning(
            request,
            f"Token for {obj.name}: {issued.token}{secret} Store it now: it is not shown again. Send "
            f"`Authorization: Bearer <token>` to /api/v1/webhooks/{obj.source}/.",
        )
