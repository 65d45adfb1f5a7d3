"""API serializers: query-parameter validation, request bodies and the shapes the API returns.

Intake payloads are validated by `rca.incidents.serializers` (the intake service owns them); the
serializers here only read models or stored engine results, and check what clients send.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from rca.api.schema import TIER_CHOICES
from rca.incidents import listing
from rca.incidents.approvals import allowed_tier
from rca.incidents.comments import COMMENT_MAX_LENGTH
from rca.incidents.models import (
    ActionProposal,
    Alert,
    AuditEvent,
    Comment,
    Evidence,
    Hypothesis,
    Incident,
    IntakeSource,
    Investigation,
)
from rca.incidents.results import result_document
from rca.incidents.workflow import NOTE_MAX_LENGTH
from rca.investigation.narrative import outcome_sentence

TIERS = TIER_CHOICES


# --- query parameters ------------------------------------------------------------------------------


class _TimeRange(serializers.Serializer[dict[str, Any]]):
    since = serializers.DateTimeField(required=False, help_text="Onset at or after (ISO 8601).")
    until = serializers.DateTimeField(required=False, help_text="Onset before (ISO 8601).")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """`until` must come after `since`."""
        if "since" in attrs and "until" in attrs and attrs["until"] <= attrs["since"]:
            raise serializers.ValidationError({"until": "must be later than since"})
        return attrs


class IncidentFilterSerializer(_TimeRange):
    """Filters of the incident list."""

    status = serializers.ChoiceField(choices=Incident.Status.choices, required=False)
    severity = serializers.CharField(max_length=32, required=False)
    service = serializers.CharField(max_length=255, required=False, help_text="The symptom's service.name.")
    source = serializers.ChoiceField(choices=IntakeSource.choices, required=False)  # type: ignore[assignment]  # the metaclass moves declared fields off the class
    q = serializers.CharField(max_length=200, required=False, help_text="Text the title contains.")
    assignee = serializers.CharField(max_length=150, required=False, help_text="The owner's user name.")
    assigned = serializers.BooleanField(
        required=False, allow_null=True, default=None, help_text="true: someone owns it; false: nobody does."
    )
    tier = serializers.ChoiceField(
        choices=TIERS, required=False, help_text="The latest investigation's tier."
    )
    ordering = serializers.ChoiceField(
        choices=list(listing.SORT_CHOICES),
        default=listing.DEFAULT_SORT,
        help_text="Sort key; a leading '-' sorts descending. Incidents without a value sort last.",
    )


class ActionFilterSerializer(serializers.Serializer[dict[str, Any]]):
    """Filters of the action list."""

    status = serializers.ChoiceField(choices=ActionProposal.Status.choices, required=False)
    tier = serializers.ChoiceField(choices=TIERS, required=False)
    incident = serializers.IntegerField(min_value=1, max_value=2**63 - 1, required=False)


class SearchQuerySerializer(_TimeRange):
    """Parameters of the past-incident search."""

    q = serializers.CharField(max_length=500, help_text="What to look for, in words.")
    service = serializers.CharField(max_length=255, required=False, help_text="A service involved.")
    fault_kind = serializers.CharField(max_length=64, required=False)
    tier = serializers.ChoiceField(choices=TIERS, required=False)
    exit = serializers.ChoiceField(choices=["confident", "no_confident_root_cause"], required=False)
    limit = serializers.IntegerField(min_value=1, max_value=50, default=10)


# --- request bodies ------------------------------------------------------------------------------


class RejectSerializer(serializers.Serializer[dict[str, Any]]):
    """A rejection and why."""

    reason = serializers.CharField(max_length=2000, help_text="Why; kept in the audit trail.")


class NewCommentSerializer(serializers.Serializer[dict[str, Any]]):
    """A comment to add; `rca.incidents.comments` strips it and checks it again (one set of rules)."""

    body = serializers.CharField(
        max_length=COMMENT_MAX_LENGTH,
        help_text=f"Plain text, at most {COMMENT_MAX_LENGTH:,} characters (surrounding whitespace dropped).",
    )


class AssignSerializer(serializers.Serializer[dict[str, Any]]):
    """Who is to own the incident."""

    assignee = serializers.CharField(
        max_length=150,
        allow_null=True,
        allow_blank=True,
        help_text="The user name of an active responder or approver; null or empty: nobody.",
    )


class NoteSerializer(serializers.Serializer[dict[str, Any]]):
    """An optional note kept in the audit trail (resolve, reopen)."""

    note = serializers.CharField(max_length=NOTE_MAX_LENGTH, required=False, allow_blank=True, default="")


class ApproveSerializer(RejectSerializer):
    """An approval, optionally at a lower tier than proposed."""

    tier = serializers.ChoiceField(
        choices=TIERS,
        required=False,
        help_text="Tier to approve at (default: the tier proposed); never above allowed_tier.",
    )


# --- engine results (stored JSON), typed for the schema ------------------------------------------


class GateSerializer(serializers.Serializer[dict[str, Any]]):
    """The verification gate's final decision."""

    state = serializers.CharField()
    exit = serializers.CharField()
    clause = serializers.CharField(help_text="Which clause of the gate decided.")
    reason = serializers.CharField()
    validated_count = serializers.IntegerField()
    root_cause = serializers.CharField(allow_null=True, help_text="Hypothesis id, on a confident exit.")
    auto_remediates = serializers.BooleanField()
    mode = serializers.CharField(help_text="active, or shadow (recorded, not governing).")


class CandidateSerializer(serializers.Serializer[dict[str, Any]]):
    """A ranked root-cause candidate."""

    entity = serializers.CharField()
    fault_kind = serializers.CharField()
    score = serializers.FloatField()
    belief = serializers.CharField(help_text="origin, symptom, healthy or deferred.")


class HopVerificationSerializer(serializers.Serializer[dict[str, Any]]):
    """A hop's forward verification: structural, statistical and temporal rules, each pass / fail /
    unknown; verified only when all pass."""

    verified = serializers.BooleanField()
    rules = serializers.DictField(child=serializers.ChoiceField(choices=["pass", "fail", "unknown"]))
    failed = serializers.ListField(child=serializers.CharField(), help_text="Rules that did not pass.")


class HopSerializer(serializers.Serializer[dict[str, Any]]):
    """One hop of the propagation path, cause -> effect."""

    cause = serializers.CharField()
    effect = serializers.CharField()
    edge = serializers.BooleanField(help_text="The dependency graph has a call edge effect -> cause.")
    evidence = serializers.ListField(child=serializers.CharField())
    verification = HopVerificationSerializer(
        allow_null=True, required=False, help_text="Forward verification; null for hops never checked."
    )


class ChainEvidenceSerializer(serializers.Serializer[dict[str, Any]]):
    """One item of the evidence chain."""

    tool = serializers.CharField()
    hypothesis = serializers.CharField()
    summary = serializers.CharField()
    verdict = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]  # the metaclass moves declared fields off the class
    observed_at = serializers.FloatField(help_text="Epoch seconds.")
    signals = serializers.DictField()


class CitationSerializer(serializers.Serializer[dict[str, Any]]):
    """The change (commit or pull request) nearest to onset on the root cause."""

    kind = serializers.CharField()
    ref = serializers.CharField()
    entity = serializers.CharField()
    at = serializers.FloatField()
    title = serializers.CharField()


class ChainSerializer(serializers.Serializer[dict[str, Any]]):
    """The evidence chain and its grounding."""

    entity = serializers.CharField()
    path = serializers.ListField(child=serializers.CharField())
    evidence = ChainEvidenceSerializer(many=True)
    citation = CitationSerializer(allow_null=True)
    subscores = serializers.DictField(child=serializers.FloatField())
    grounding = serializers.CharField()


def _stored(value: Any) -> Any:
    """A stored JSON object, or None while the investigation has not produced it."""
    return value if isinstance(value, Mapping) and value else None


def outcome_of(investigation: Investigation) -> str | None:
    """The one-sentence outcome of a finished investigation (None until it has succeeded)."""
    document = result_document(investigation)
    return outcome_sentence(document) if document is not None else None


# --- models ----------------------------------------------------------------------------------------


class AlertSerializer(serializers.ModelSerializer[Alert]):
    """An alert episode as received."""

    class Meta:
        model = Alert
        fields = (
            "id",
            "source",
            "fingerprint",
            "status",
            "labels",
            "annotations",
            "entity",
            "starts_at",
            "ends_at",
            "generator_url",
            "received_at",
        )


class InvestigationSummarySerializer(serializers.ModelSerializer[Investigation]):
    """What an investigation concluded, in brief."""

    outcome_sentence = serializers.SerializerMethodField()

    class Meta:
        model = Investigation
        fields: tuple[str, ...] = (
            "id",
            "status",
            "exit",
            "outcome",
            "outcome_sentence",
            "tier",
            "grounding",
            "raw_confidence",
            "capped_confidence",
            "root_cause_entity",
            "root_cause_kind",
            "root_cause_detail",
            "progress",
            "created_at",
            "started_at",
            "finished_at",
        )

    def get_outcome_sentence(self, obj: Investigation) -> str | None:
        """E.g. "Confident: checkout is the root cause (cpu), grounded by ..."."""
        return outcome_of(obj)


class IncidentListSerializer(serializers.ModelSerializer[Incident]):
    """An incident in a list; `latest_*` come from its most recent investigation."""

    service = serializers.CharField(source="symptom_entity", help_text="The symptom's service.name.")
    latest_investigation_status = serializers.CharField(allow_null=True, read_only=True)
    latest_tier = serializers.CharField(allow_null=True, read_only=True)
    latest_exit = serializers.CharField(allow_null=True, read_only=True)
    latest_confidence = serializers.FloatField(
        allow_null=True, read_only=True, help_text="The latest investigation's capped confidence."
    )
    assignee: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True, help_text="The owner's user name."
    )
    acknowledged_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = Incident
        fields: tuple[str, ...] = (
            "id",
            "title",
            "status",
            "severity",
            "service",
            "source",
            "onset",
            "created_at",
            "resolved_at",
            "latest_investigation_status",
            "latest_tier",
            "latest_exit",
            "latest_confidence",
            "assignee",
            "acknowledged_at",
            "acknowledged_by",
        )


class CommentSerializer(serializers.ModelSerializer[Comment]):
    """A comment on an incident: plain text, to be shown escaped."""

    author: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, help_text="The author's user name."
    )

    class Meta:
        model = Comment
        fields = ("id", "incident", "author", "body", "created_at")
        read_only_fields = fields


# The detail holds an incident's first alerts; a storm's thousands page through incidents/{id}/alerts/.
DETAIL_ALERTS = 50


class IncidentDetailSerializer(IncidentListSerializer):
    """An incident with its first alerts, its latest investigation and its comments (oldest first)."""

    alerts = serializers.SerializerMethodField()
    alert_count = serializers.IntegerField(read_only=True, help_text="All of the incident's alerts.")
    comments = CommentSerializer(many=True, read_only=True)
    latest_investigation = serializers.SerializerMethodField()
    investigations = serializers.SerializerMethodField()

    class Meta(IncidentListSerializer.Meta):
        fields = (
            *IncidentListSerializer.Meta.fields,
            "fingerprint",
            "group_key",
            "labels",
            "alert_count",
            "alerts",
            "latest_investigation",
            "investigations",
            "comments",
        )

    @extend_schema_field(AlertSerializer(many=True))
    def get_alerts(self, obj: Incident) -> list[dict[str, Any]]:
        """The first DETAIL_ALERTS alerts by firing time (all of them: `alerts/`, paginated)."""
        first = obj.alerts.order_by("starts_at", "id")[:DETAIL_ALERTS]
        return list(AlertSerializer(first, many=True).data)

    @extend_schema_field(InvestigationSummarySerializer(allow_null=True))
    def get_latest_investigation(self, obj: Incident) -> dict[str, Any] | None:
        """The most recent investigation, summarised."""
        investigations = list(obj.investigations.all())  # prefetched, newest first
        return InvestigationSummarySerializer(investigations[0]).data if investigations else None

    @extend_schema_field(
        serializers.ListField(
            child=serializers.DictField(), help_text="Every attempt: id, status, created_at."
        )
    )
    def get_investigations(self, obj: Incident) -> list[dict[str, Any]]:
        """Every investigation of the incident, newest first."""
        return [
            {"id": inv.pk, "status": inv.status, "created_at": inv.created_at.isoformat()}
            for inv in obj.investigations.all()
        ]


class EvidenceSerializer(serializers.ModelSerializer[Evidence]):
    """One evidence item behind a hypothesis."""

    class Meta:
        model = Evidence
        fields = ("seq", "tool", "target", "source", "verdict", "summary", "observed_at", "signals")


class HypothesisSerializer(serializers.ModelSerializer[Hypothesis]):
    """A hypothesis with its derived state and its evidence."""

    evidence = EvidenceSerializer(many=True, read_only=True)

    class Meta:
        model = Hypothesis
        fields = ("key", "parent_key", "entity", "fault_kind", "detail", "state", "prior", "rank", "evidence")


class ActionProposalSerializer(serializers.ModelSerializer[ActionProposal]):
    """A proposed action; `allowed_tier` is the highest tier it may be approved at."""

    incident = serializers.IntegerField(source="investigation.incident_id", read_only=True)
    allowed_tier = serializers.SerializerMethodField()
    decided_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = ActionProposal
        fields: tuple[str, ...] = (
            "id",
            "investigation",
            "incident",
            "title",
            "body",
            "tier",
            "max_allowed_tier",
            "allowed_tier",
            "status",
            "decided_by",
            "decided_at",
            "reason",
            "created_at",
        )

    @extend_schema_field(serializers.ChoiceField(choices=TIERS))
    def get_allowed_tier(self, obj: ActionProposal) -> str:
        """The approval ceiling, enforced by the approval service."""
        return allowed_tier(obj).value


class AuditEventSerializer(serializers.ModelSerializer[AuditEvent]):
    """One entry of an audit trail."""

    actor = serializers.CharField(source="actor_label")

    class Meta:
        model = AuditEvent
        fields = ("id", "at", "actor", "verb", "detail")


class ActionDetailSerializer(ActionProposalSerializer):
    """A proposed action with what executing it produced (artifact address, patch, the requests sent or,
    in dry run, held back; see rca.actions) and its audit trail (oldest first)."""

    audit = serializers.SerializerMethodField()

    class Meta(ActionProposalSerializer.Meta):
        fields = (
            *ActionProposalSerializer.Meta.fields,
            "artifact_url",
            "patch",
            "execution",
            "executed_at",
            "error",
            "audit",
        )

    @extend_schema_field(AuditEventSerializer(many=True))
    def get_audit(self, obj: ActionProposal) -> list[dict[str, Any]]:
        """Every event about this action, oldest first."""
        events = AuditEvent.objects.filter(target_type=obj._meta.label_lower, target_id=str(obj.pk))
        return list(AuditEventSerializer(events.order_by("at", "id"), many=True).data)


class NextStepSerializer(serializers.Serializer[dict[str, Any]]):
    """One bounded next step of recovery guidance."""

    target = serializers.CharField(help_text="The entity (service.name) the step is about.")
    operation = serializers.ChoiceField(choices=["examine", "widen_window", "rerun", "connect_modality"])
    verify = serializers.CharField(help_text="The signal that would verify it.")
    stop_when = serializers.CharField(help_text="When to give up on it.")
    grounds = serializers.CharField(help_text="The recorded fact it derives from.")


class GuidanceSerializer(serializers.Serializer[dict[str, Any]]):
    """Why an investigation could not conclude (its failure anchor) and at most three next steps."""

    anchor = serializers.CharField()
    detail = serializers.CharField()
    steps = NextStepSerializer(many=True)
    dropped = serializers.ListField(child=serializers.CharField(), help_text="Refused steps, and why.")
    from_investigation = serializers.IntegerField(required=False, help_text="Set on applied guidance.")
    plan = serializers.DictField(
        required=False, help_text="What the re-run changed: entities examined first, extra turns, window."
    )


class RecallSerializer(serializers.Serializer[dict[str, Any]]):
    """Seeding priors recalled from similar past incidents: a head start, never evidence."""

    priors = serializers.DictField(
        child=serializers.FloatField(), required=False, help_text="service.name -> prior in [0, 1]."
    )
    note = serializers.CharField(required=False, help_text="Where the priors came from, or why none.")


class InvestigationDetailSerializer(InvestigationSummarySerializer):
    """Everything an investigation found and why it stopped."""

    incident: serializers.PrimaryKeyRelatedField[Incident] = serializers.PrimaryKeyRelatedField(
        read_only=True
    )
    gate = serializers.SerializerMethodField()
    evidence_chain = serializers.SerializerMethodField()
    candidates = CandidateSerializer(many=True, read_only=True)
    propagation_path = HopSerializer(many=True, read_only=True)
    hypotheses = HypothesisSerializer(many=True, read_only=True)
    proposals = ActionProposalSerializer(many=True, read_only=True)
    recall = RecallSerializer(read_only=True)
    guidance = serializers.SerializerMethodField()
    applied_guidance = serializers.SerializerMethodField()

    class Meta(InvestigationSummarySerializer.Meta):
        fields = (
            *InvestigationSummarySerializer.Meta.fields,
            "incident",
            "attempt_key",
            "policy",
            "gate",
            "candidates",
            "propagation_path",
            "evidence_chain",
            "beliefs",
            "hypotheses",
            "proposals",
            "turns",
            "tokens_in",
            "tokens_out",
            "cost_usd",
            "error",
            "policy_failure",
            "policy_notes",
            "recall",
            "guidance",
            "applied_guidance",
            "projected_at",
            "indexed_at",
        )
        extra_kwargs: ClassVar[dict[str, dict[str, str]]] = {
            "projected_at": {"help_text": "When the result reached the graph; null while pending."},
            "indexed_at": {"help_text": "When the incident reached incident memory; null while pending."},
        }

    @extend_schema_field(GuidanceSerializer(allow_null=True))
    def get_guidance(self, obj: Investigation) -> Any:
        """Recovery guidance of a no-confident exit (null otherwise)."""
        return _stored(obj.guidance)

    @extend_schema_field(GuidanceSerializer(allow_null=True))
    def get_applied_guidance(self, obj: Investigation) -> Any:
        """The earlier investigation's guidance this re-run applied (null for a plain run)."""
        return _stored(obj.applied_guidance)

    @extend_schema_field(GateSerializer(allow_null=True))
    def get_gate(self, obj: Investigation) -> Any:
        """Why the investigation stopped: the gate's state and clause (null until it has)."""
        return _stored(obj.gate)

    @extend_schema_field(ChainSerializer(allow_null=True))
    def get_evidence_chain(self, obj: Investigation) -> Any:
        """The evidence chain with its grounding (null until the investigation concluded)."""
        return _stored(obj.evidence_chain)


# --- responses of actions --------------------------------------------------------------------------


class IntakeResultSerializer(serializers.Serializer[dict[str, Any]]):
    """What one webhook delivery changed."""

    incidents = serializers.ListField(child=serializers.IntegerField())
    incidents_created = serializers.ListField(child=serializers.IntegerField())
    incidents_updated = serializers.ListField(child=serializers.IntegerField())
    alerts_stored = serializers.IntegerField()
    alerts_resolved = serializers.IntegerField()
    duplicates = serializers.IntegerField()


class RerunRequestSerializer(serializers.Serializer[dict[str, Any]]):
    """A re-run request."""

    apply_guidance = serializers.BooleanField(
        default=False, help_text="Apply this investigation's recovery guidance (409 when it has none)."
    )


class RerunSerializer(serializers.Serializer[dict[str, Any]]):
    """The investigation a re-run queued."""

    investigation = serializers.IntegerField()
    incident = serializers.IntegerField()
    status = serializers.CharField()


class SearchHitSerializer(serializers.Serializer[dict[str, Any]]):
    """One past incident found by search, best first."""

    incident = serializers.IntegerField()
    score = serializers.FloatField(help_text="Cosine similarity to the query.")
    title = serializers.CharField()
    status = serializers.CharField(help_text="The incident's current status.")
    symptom_entity = serializers.CharField()
    services = serializers.ListField(child=serializers.CharField())
    root_cause_entity = serializers.CharField()
    fault_kind = serializers.CharField()
    tier = serializers.CharField()
    exit = serializers.CharField()
    evidence = serializers.ListField(child=serializers.CharField())
    onset = serializers.DateTimeField()


class SearchResultSerializer(serializers.Serializer[dict[str, Any]]):
    """Search results."""

    query = serializers.CharField()
    results = SearchHitSerializer(many=True)


class ErrorSerializer(serializers.Serializer[dict[str, Any]]):
    """Every error: `detail`, plus `errors` (field path -> reason) on validation failures."""

    detail = serializers.CharField()
    code = serializers.CharField(required=False)
    errors = serializers.DictField(child=serializers.CharField(), required=False)  # type: ignore[assignment]  # the metaclass moves declared fields off the class


class HealthCheckSerializer(serializers.Serializer[dict[str, Any]]):
    """One dependency's health."""

    status = serializers.ChoiceField(choices=["ok", "down"])
    detail = serializers.CharField()


class HealthSerializer(serializers.Serializer[dict[str, Any]]):
    """Each dependency as ok / down with the reason."""

    status = serializers.ChoiceField(choices=["ok", "down"])
    checks = serializers.DictField(child=HealthCheckSerializer())
