"""Relational models: the source of truth for incidents, their alerts and investigations.

The graph projection (Neo4j / ArcadeDB) and incident memory (Qdrant) are rebuilt from these rows, so
every value a page or a later investigation needs lives here. Business rules live in
`rca.incidents.intake` and `rca.incidents.services`; the models only hold data and the invariants the
database can enforce (uniqueness for idempotent intake and tasks, the append-only audit trail).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, NoReturn

from django.conf import settings
from django.core.validators import MaxLengthValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual

from rca.core.actions import ActionTier, OutcomeKind
from rca.core.evidence import Source as EvidenceSource
from rca.core.evidence import Verdict
from rca.core.gate import GateExit
from rca.core.grounding import Grounding
from rca.core.hypotheses import HypothesisState


def _choices(enum: type[StrEnum]) -> list[tuple[str, str]]:
    """Django choices from a safety-core enum, so the database speaks the core's vocabulary."""
    return [(member.value, member.value.replace("_", " ")) for member in enum]


class IntakeSource(models.TextChoices):
    """How an alert reached Rootline."""

    ALERTMANAGER = "alertmanager", "Alertmanager webhook"
    GENERIC = "generic", "Generic JSON"
    RECORDED = "recorded", "Recorded case"


# Incident statuses in which new alerts of the same group join the incident instead of opening another.
ACTIVE_STATUSES = ("open", "investigating")


class Incident(models.Model):
    """One incident: a group of alerts (one Alertmanager group, or one recorded case) to investigate."""

    class Status(models.TextChoices):
        OPEN = "open"
        INVESTIGATING = "investigating"
        RESOLVED = "resolved"

    ACTIVE: ClassVar[tuple[str, ...]] = ACTIVE_STATUSES

    title = models.CharField(max_length=500)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    severity = models.CharField(max_length=32, blank=True)
    onset = models.DateTimeField(help_text="Earliest firing time among the incident's alerts.")
    symptom_entity = models.CharField(max_length=255, blank=True, help_text="service.name of the symptom.")
    fingerprint = models.CharField(max_length=255, help_text="Dedupe key: the opening alert's fingerprint.")
    group_key = models.CharField(max_length=1000, help_text="Alerts with this key join this incident.")
    source = models.CharField(max_length=16, choices=IntakeSource.choices)
    labels = models.JSONField(default=dict, blank=True)
    recorded_case = models.JSONField(
        null=True,
        blank=True,
        help_text="Where the recorded telemetry is: dataset, case_id, data_dir.",
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    # The responder workflow (rules and audit events: rca.incidents.workflow). Users are deactivated,
    # not deleted, so SET_NULL only ever clears an assignment an admin removed by hand.
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_incidents",
        help_text="The responder who owns the incident.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-created_at",)
        constraints = (
            # Importing a recorded case twice must yield one incident.
            models.UniqueConstraint(
                fields=("source", "fingerprint"),
                condition=Q(source="recorded"),
                name="incident_recorded_case_once",
            ),
            # At most one active incident per group: concurrent deliveries race on this, not on luck.
            models.UniqueConstraint(
                fields=("source", "group_key"),
                condition=Q(status__in=ACTIVE_STATUSES),
                name="incident_one_active_per_group",
            ),
        )
        indexes = (
            models.Index(fields=("status", "created_at"), name="incident_status_created"),
            models.Index(fields=("source", "group_key", "resolved_at"), name="incident_group_resolved"),
        )

    def __str__(self) -> str:
        return f"#{self.pk} {self.title}"


class Alert(models.Model):
    """One alert episode (fingerprint + firing time) as delivered, attached to its incident."""

    class Status(models.TextChoices):
        FIRING = "firing"
        RESOLVED = "resolved"

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="alerts")
    source = models.CharField(max_length=16, choices=IntakeSource.choices)
    fingerprint = models.CharField(max_length=255)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.FIRING)
    labels = models.JSONField(default=dict, blank=True)
    annotations = models.JSONField(default=dict, blank=True)
    entity = models.JSONField(
        default=dict, blank=True, help_text="OpenTelemetry resource attributes mapped from the labels."
    )
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(null=True, blank=True)
    generator_url = models.TextField(blank=True)
    raw = models.JSONField(help_text="The payload exactly as received (see rca.incidents.intake).")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("starts_at", "id")
        constraints = (
            # A re-sent notification maps to the same row: intake is idempotent on this key.
            models.UniqueConstraint(
                fields=("source", "fingerprint", "starts_at"), name="alert_once_per_episode"
            ),
        )

    def __str__(self) -> str:
        return f"{self.labels.get('alertname', self.fingerprint)} ({self.status})"


class Investigation(models.Model):
    """One attempt at explaining an incident, with the safety core's verdicts and the engine's result."""

    class Policy(models.TextChoices):
        OFFLINE = "offline"
        ANTHROPIC = "anthropic"
        # The Anthropic policy gave way to the offline one part-way (errors, a refusal; see policy_notes).
        ANTHROPIC_FALLBACK = "anthropic->offline"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="investigations")
    # Chosen by the task that runs the attempt (e.g. "<incident>:<n>"); a redelivered task finds its row.
    attempt_key = models.CharField(max_length=200, unique=True)
    policy = models.CharField(max_length=32, choices=Policy.choices, default=Policy.OFFLINE)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progress = models.JSONField(default=dict, blank=True, help_text="turn, last_tool, hypotheses so far.")
    gate = models.JSONField(default=dict, blank=True, help_text="state, exit, clause, reason, mode.")
    exit = models.CharField(max_length=32, choices=_choices(GateExit), blank=True)
    raw_confidence = models.FloatField(null=True, blank=True)
    capped_confidence = models.FloatField(null=True, blank=True)
    grounding = models.CharField(max_length=32, choices=_choices(Grounding), blank=True)
    tier = models.CharField(max_length=16, choices=_choices(ActionTier), blank=True)
    outcome = models.CharField(max_length=32, choices=_choices(OutcomeKind), blank=True)
    root_cause_entity = models.CharField(max_length=255, blank=True)
    root_cause_kind = models.CharField(max_length=64, blank=True)
    root_cause_detail = models.CharField(
        max_length=320, blank=True, help_text="What the detail level named: instance:<pod>, change:<ref>, ..."
    )
    candidates = models.JSONField(default=list, blank=True)
    propagation_path = models.JSONField(default=list, blank=True)
    evidence_chain = models.JSONField(default=list, blank=True)
    beliefs = models.JSONField(default=dict, blank=True)
    turns = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    error = models.TextField(blank=True)
    # The dependency graph the engine saw, so the explorer and the graph projection need no telemetry.
    topology = models.JSONField(default=dict, blank=True, help_text="entities and edges.")
    backends = models.JSONField(
        default=dict, blank=True, help_text="Each live telemetry backend's state when the run ended."
    )
    recall = models.JSONField(
        default=dict, blank=True, help_text="Seeding priors recalled from past incidents (never evidence)."
    )
    # Set by the pipeline's later steps; null means still pending (or retrying) and `sync_graph` /
    # re-indexing can finish it.
    projected_at = models.DateTimeField(null=True, blank=True)
    indexed_at = models.DateTimeField(null=True, blank=True)
    # The outbox mark: when the investigate task reached the broker. Null while queued means it has not
    # (the broker was down at intake); `dispatch_pending` sends it once the broker is back.
    dispatched_at = models.DateTimeField(null=True, blank=True)
    # Recovery (rca.incidents.recovery): how often the task was handed to the broker, the worker that
    # claimed the run, and that worker's last sign of life. A queued investigation sent long ago, or a
    # running one whose heartbeat went silent, is sent again; a live claim makes a duplicate a no-op.
    dispatches = models.PositiveIntegerField(default=0)
    claimed_by = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    policy_failure = models.TextField(
        blank=True, help_text="Why the policy failed closed (token or cost budget); then nothing is named."
    )
    policy_notes = models.JSONField(
        default=list, blank=True, help_text="Retries, refused model calls, a fallback to the offline policy."
    )
    guidance = models.JSONField(
        default=dict, blank=True, help_text="Recovery guidance of a no-confident exit: anchor and next steps."
    )
    applied_guidance = models.JSONField(
        default=dict, blank=True, help_text="The earlier guidance this re-run applied, and how."
    )
    # The typed, versioned result (rca.investigation.document): what the pages and the API read. Null for
    # an investigation stored before it existed (rca.incidents.results rebuilds one from the rows).
    result_document = models.JSONField(
        null=True, blank=True, help_text="The result document: conclusion and recorded facts (versioned)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-created_at",)
        indexes = (models.Index(fields=("incident", "created_at"), name="investigation_incident"),)

    def __str__(self) -> str:
        return f"investigation {self.attempt_key} ({self.status})"

    def named_root_cause(self) -> dict[str, str] | None:
        """The root cause as the stored result names it (entity, fault kind, detail), or None."""
        if not self.root_cause_entity:
            return None
        return {
            "entity": self.root_cause_entity,
            "fault_kind": self.root_cause_kind,
            "detail": self.root_cause_detail,
        }


class Hypothesis(models.Model):
    """One node of the final hypothesis tree; `state` is the core's derived state, copied, never set."""

    investigation = models.ForeignKey(Investigation, on_delete=models.CASCADE, related_name="hypotheses")
    key = models.CharField(max_length=320, help_text="The engine's hypothesis id.")
    entity = models.CharField(max_length=255)
    fault_kind = models.CharField(max_length=64, blank=True)
    detail = models.CharField(max_length=320, blank=True, help_text="Set on detail-level hypotheses.")
    parent_key = models.CharField(max_length=320, blank=True)
    state = models.CharField(max_length=16, choices=_choices(HypothesisState))
    prior = models.FloatField(default=0.0)
    rank = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ("investigation", "rank", "key")
        verbose_name_plural = "hypotheses"
        constraints = (
            models.UniqueConstraint(fields=("investigation", "key"), name="hypothesis_key_per_investigation"),
        )

    def __str__(self) -> str:
        return f"{self.key}: {self.entity} {self.fault_kind} ({self.state})"


class Evidence(models.Model):
    """One evidence item behind a hypothesis, in the order the sink accepted it."""

    hypothesis = models.ForeignKey(Hypothesis, on_delete=models.CASCADE, related_name="evidence")
    seq = models.PositiveIntegerField()
    tool = models.CharField(max_length=64)
    target = models.CharField(max_length=255, blank=True)
    source = models.CharField(max_length=16, choices=_choices(EvidenceSource))
    verdict = models.CharField(max_length=16, choices=_choices(Verdict))
    summary = models.CharField(max_length=280)
    observed_at = models.DateTimeField(null=True, blank=True)
    signals = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ("hypothesis", "seq")
        verbose_name_plural = "evidence"
        constraints = (
            models.UniqueConstraint(fields=("hypothesis", "seq"), name="evidence_seq_per_hypothesis"),
            # The sink drops model-inferred items at the door; the database refuses them too.
            models.CheckConstraint(condition=~Q(source="llm_inferred"), name="evidence_never_llm_inferred"),
        )

    def __str__(self) -> str:
        return f"{self.tool} {self.verdict}: {self.summary[:60]}"


class ActionProposal(models.Model):
    """A proposed action; a human approves or rejects it, nothing runs on its own."""

    class Status(models.TextChoices):
        PROPOSED = "proposed"
        APPROVED = "approved"
        REJECTED = "rejected"
        EXECUTING = "executing"
        DONE = "done"
        FAILED = "failed"
        # A re-run of the incident replaced it: one live proposal per incident, this one not approvable.
        SUPERSEDED = "superseded"

    investigation = models.ForeignKey(Investigation, on_delete=models.CASCADE, related_name="proposals")
    superseded_by = models.ForeignKey(
        Investigation,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The re-run whose request superseded this proposal.",
    )
    tier = models.CharField(max_length=16, choices=_choices(ActionTier))
    max_allowed_tier = models.CharField(
        max_length=16, choices=_choices(ActionTier), help_text="The ceiling the evidence allowed."
    )
    title = models.CharField(max_length=300)
    body = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROPOSED)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    # What executing the approved action produced (rca.actions): the artifact's address, the patch,
    # and the requests sent (or, in dry run, that would have been sent).
    artifact_url = models.URLField(max_length=500, blank=True)
    patch = models.TextField(blank=True, help_text="The proposed change as a unified diff.")
    execution = models.JSONField(
        default=dict, blank=True, help_text="kind, dry_run, requests, patch_note, number, branch."
    )
    executed_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="Why the last execution attempt failed.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"{self.tier}: {self.title} ({self.status})"


# The longest comment body accepted (characters): a paragraph or a pasted log excerpt, never a dump.
COMMENT_MAX_LENGTH = 10_000


class Comment(models.Model):
    """A note a responder or approver left on an incident. Append-only: the services add comments,
    nothing edits or deletes one (rules and the audit event: `rca.incidents.comments`)."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="comments")
    # PROTECT, as for the audit trail: an author is deactivated, not deleted, so a comment keeps its author.
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    body = models.TextField(
        max_length=COMMENT_MAX_LENGTH,
        validators=[MaxLengthValidator(COMMENT_MAX_LENGTH)],  # TextField's max_length alone is form-only
        help_text="Plain text, shown escaped.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("created_at", "id")
        indexes = (models.Index(fields=("incident", "created_at"), name="comment_incident_created"),)
        constraints = (
            # The service refuses these first (with the reason); the database refuses them too.
            models.CheckConstraint(condition=Q(body__regex=r"\S"), name="comment_body_not_blank"),
            models.CheckConstraint(
                condition=LessThanOrEqual(Length("body"), COMMENT_MAX_LENGTH), name="comment_body_max_length"
            ),
        )

    def __str__(self) -> str:
        return f"comment {self.pk} on incident {self.incident_id}"


class AppendOnlyError(RuntimeError):
    """An audit event was about to be changed or deleted."""


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    """Bulk paths that would bypass `AuditEvent.save` / `delete` are refused too."""

    def update(self, **kwargs: Any) -> NoReturn:
        """Refused: audit events are append-only."""
        raise AppendOnlyError("audit events are append-only: update refused")

    def delete(self) -> NoReturn:
        """Refused: audit events are append-only."""
        raise AppendOnlyError("audit events are append-only: delete refused")


class AuditEvent(models.Model):
    """Who did what, when, to what. Append-only: rows are inserted, never changed or deleted."""

    # PROTECT: a user who has acted is deactivated, not deleted, so the trail keeps its actor.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_label = models.CharField(max_length=150, help_text="User name, or the system part that acted.")
    verb = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    detail = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ("-at", "-id")
        indexes = (models.Index(fields=("target_type", "target_id", "at"), name="audit_target"),)

    def __str__(self) -> str:
        return (
            f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_label} {self.verb} {self.target_type}:{self.target_id}"
        )

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Insert only; saving an already stored event raises `AppendOnlyError`."""
        if not self._state.adding:
            raise AppendOnlyError(f"audit event {self.pk} is append-only: update refused")
        # Forced INSERT: a new instance carrying an existing pk must fail, not overwrite that row.
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Always raises `AppendOnlyError`."""
        raise AppendOnlyError(f"audit event {self.pk} is append-only: delete refused")


class IntakeToken(models.Model):
    """A credential one alert sender uses on one intake webhook (see `rca.incidents.tokens`).

    The bearer token itself is never stored: only its SHA-256 (it is 256 random bits, so a fast hash
    is enough) and a short prefix to recognise it by. A token with `hmac_salt` may also sign request
    bodies; its HMAC secret is derived from that salt and SECRET_KEY, so the table alone reveals neither.
    """

    SOURCES: ClassVar[tuple[str, ...]] = (IntakeSource.ALERTMANAGER, IntakeSource.GENERIC)

    name = models.CharField(max_length=100, unique=True)
    source = models.CharField(
        max_length=16,
        choices=[(s, IntakeSource(s).label) for s in SOURCES],
        help_text="The one webhook this token is accepted on.",
    )
    token_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 hex of the token.")
    prefix = models.CharField(max_length=12, help_text="The token's first characters, to recognise it.")
    hmac_salt = models.CharField(
        max_length=64, blank=True, help_text="Set when the sender may sign bodies with HMAC-SHA256."
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name",)
        indexes = (models.Index(fields=("source", "active"), name="intake_token_source_active"),)

    def __str__(self) -> str:
        return f"{self.name} ({self.source}, {self.prefix}…)"
