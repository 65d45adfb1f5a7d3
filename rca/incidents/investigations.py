"""Investigations of incidents: queue one, run the engine, store what it concluded.

The relational database is the source of truth: an investigation's row, its hypotheses and
evidence and its proposed action are written in one transaction, so the graph projection and the
incident memory can always be rebuilt from them. Running the same investigation twice (a redelivered
task) stores one result: a finished investigation is not run again, and a half-done one (its worker
died) is run again from the start, replacing whatever it had written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from rca.core.actions import max_allowed_tier
from rca.core.gate import GateExit
from rca.incidents.models import ActionProposal, Evidence, Hypothesis, Incident, Investigation
from rca.incidents.models import Alert as IncidentAlert
from rca.incidents.outbox import claim, dispatch, keep_alive, still_mine
from rca.incidents.services import record_audit
from rca.integrations.prometheus.alerts import AlertTarget, alert_target, expression_of
from rca.investigation.document import document_of
from rca.investigation.engine import EngineConfig, investigate
from rca.investigation.narrative import action_body, action_title
from rca.investigation.policy import Spend
from rca.investigation.policy_settings import policy_factory
from rca.investigation.recovery import RerunPlan
from rca.investigation.result import InvestigationResult
from rca.telemetry.cases import find_case, load_case
from rca.telemetry.live.source import LiveConfig, LiveSource
from rca.telemetry.model import Alert, DependencyGraph, TelemetrySource

log = logging.getLogger(__name__)


def queue_investigation(incident: Incident, guidance_from: Investigation | None = None) -> Investigation:
    """Create the next investigation of `incident` and send it to a worker once this commits.

    With `guidance_from`, the new run applies that investigation's recovery guidance (see
    `rca.investigation.recovery.RerunPlan`).
    """
    attempt = incident.investigations.count() + 1
    applied = {"from_investigation": guidance_from.pk, **guidance_from.guidance} if guidance_from else {}
    investigation = Investigation.objects.create(
        incident=incident,
        attempt_key=f"{incident.pk}:{attempt}",
        policy=settings.ROOTLINE_POLICY.kind,
        status=Investigation.Status.QUEUED,
        applied_guidance=applied,
    )
    Incident.objects.filter(pk=incident.pk).exclude(status=Incident.Status.RESOLVED).update(
        status=Incident.Status.INVESTIGATING
    )
    record_audit(
        "investigation.queued",
        incident,
        actor_label="intake",
        detail={
            "source": incident.source,
            "group_key": incident.group_key,
            "investigation": investigation.pk,
        },
    )
    transaction.on_commit(lambda: dispatch(investigation.pk))  # the outbox sends it if this fails
    return investigation


def telemetry_for(incident: Incident) -> tuple[TelemetrySource, Alert]:
    """The telemetry source and the alert of an incident: its recorded case, or the live backends."""
    recorded = incident.recorded_case
    if recorded:
        data_dir = Path(recorded["data_dir"])
        case = load_case(data_dir, find_case(data_dir, recorded["dataset"], recorded["case_id"]))
        return case.source, case.alert
    config = LiveConfig.from_mapping(settings.ROOTLINE_LIVE_TELEMETRY)
    source = LiveSource(config)
    labels = {str(k): str(v) for k, v in (incident.labels or {}).items()}
    symptom, target = _symptom_alert(incident, labels, config.service_labels())
    # The onset hint: when the rule's condition began to hold (Prometheus's `activeAt`), else when the
    # alert fired; the latter lags the former by the rule's `for:` and more when the data arrived late.
    fired = incident.onset.timestamp()
    expr = expression_of(symptom.generator_url) if symptom else None
    own = {str(k): str(v) for k, v in (symptom.labels if symptom else {}).items()}
    since = source.condition_since(expr, {**labels, **own}, fired) if expr else None
    alert = Alert(
        name=incident.title,
        entity=incident.symptom_entity or target.entity or "",
        fired_at=min(fired, since) if since is not None else fired,
        severity=incident.severity or "critical",
        metric=target.metric,
        labels=labels,
    )
    return source, alert


def _symptom_alert(
    incident: Incident, labels: Mapping[str, str], service_labels: Sequence[str]
) -> tuple[IncidentAlert | None, AlertTarget]:
    """The alert that names the incident's symptom, with what it watches: the first to fire; of alerts
    that fired together, one on failed requests (as within one rule's expression, `alert_target`): a
    failure is followed down to the deepest entity that fails, while a slow or failing callee raises the
    latency of every caller, so an error ratio and a latency alert firing at once name the failure."""
    alerts = list(incident.alerts.order_by("starts_at", "pk"))
    if not alerts:
        return None, alert_target(labels, "", service_labels)
    together = [
        (a, alert_target(labels, a.generator_url, service_labels))
        for a in alerts
        if a.starts_at == alerts[0].starts_at
    ]
    return next(((a, t) for a, t in together if t.failures), together[0])


def month_spend(now: datetime | None = None, exclude: int | None = None) -> Spend:
    """The language-model tokens and cost of the investigations finished in `now`'s calendar month
    (UTC; default this month), leaving out investigation `exclude`."""
    at = (now or timezone.now()).astimezone(UTC)
    start = at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)
    finished = Investigation.objects.filter(finished_at__gte=start, finished_at__lt=end)
    if exclude is not None:
        finished = finished.exclude(pk=exclude)
    used = finished.aggregate(tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"), cost=Sum("cost_usd"))
    return Spend(
        tokens=(used["tokens_in"] or 0) + (used["tokens_out"] or 0), cost_usd=float(used["cost"] or 0)
    )


def _progress_writer(investigation_id: int) -> Callable[[int, str, int], None]:
    def write(turn: int, last_tool: str, hypotheses: int) -> None:
        # A plain UPDATE outside the result transaction, so a page can poll it while the loop runs.
        Investigation.objects.filter(pk=investigation_id).update(
            progress={"turn": turn, "last_tool": last_tool, "hypotheses": hypotheses}
        )

    return write


def run_investigation(
    investigation_id: int,
    priors: Mapping[str, float] | None = None,
    config: EngineConfig | None = None,
    recall_note: str = "",
) -> Investigation:
    """Run one queued (or interrupted) investigation and store its result; idempotent.

    `priors` (recalled from similar past incidents, `recall_note` says how) only nudge seeding; they
    are stored with the result so a reader can see what the engine started from.
    """
    with transaction.atomic():
        investigation = Investigation.objects.select_for_update().get(pk=investigation_id)
        # A redelivered or re-sent task: stored already, or another live worker runs it (outbox.claim).
        mine = claim(investigation)
        if mine is None:
            return investigation
    with keep_alive(investigation.pk, mine):
        _run(investigation, mine, priors, config, recall_note)
    return investigation


def _run(
    investigation: Investigation,
    mine: str,
    priors: Mapping[str, float] | None,
    config: EngineConfig | None,
    recall_note: str,
) -> None:
    incident = investigation.incident
    # The month's use is read when the policy is made, just before the engine starts it.
    month = partial(month_spend, exclude=investigation.pk)
    config = config or EngineConfig(policy=policy_factory(settings.ROOTLINE_POLICY, month))
    recalled = dict(priors or {})
    if investigation.applied_guidance:
        plan = RerunPlan.from_guidance(investigation.applied_guidance)
        config, priors = _apply(plan, config, priors)
        investigation.applied_guidance = {**investigation.applied_guidance, "plan": plan.to_dict()}
        Investigation.objects.filter(pk=investigation.pk).update(
            applied_guidance=investigation.applied_guidance
        )
    try:
        source, alert = telemetry_for(incident)
        topology = source.topology()
        progress = _progress_writer(investigation.pk)
        result = investigate(source, alert, config, priors=priors, progress=progress)
    except Exception as exc:
        log.exception("investigation %s failed", investigation.pk)
        Investigation.objects.filter(pk=investigation.pk).update(
            status=Investigation.Status.FAILED,
            finished_at=timezone.now(),
            error=f"{type(exc).__name__}: {exc}",
        )
        record_audit("investigation.failed", investigation, detail={"error": str(exc)[:500]})
        raise
    if not still_mine(investigation.pk, mine):
        log.warning(
            "investigation %s was handed to another worker meanwhile: result not stored", investigation.pk
        )
        return
    store_result(
        investigation,
        result,
        topology=topology,
        recall={"priors": recalled, "note": recall_note},
        backends=source.backend_states() if isinstance(source, LiveSource) else None,
    )


def _apply(
    plan: RerunPlan, config: EngineConfig, priors: Mapping[str, float] | None
) -> tuple[EngineConfig, dict[str, float]]:
    """The engine settings and seeding priors of a re-run that applies recovery guidance: the entities
    to examine first as priors (never evidence), more turns, a wider incident window."""
    merged = dict(priors or {})
    for entity, prior in plan.priors().items():
        merged[entity] = max(prior, merged.get(entity, 0.0))
    widened = replace(
        config,
        max_turns=config.max_turns + plan.extra_turns,
        before_onset_s=config.before_onset_s * plan.widen,
        after_onset_s=config.after_onset_s * plan.widen,
    )
    return widened, merged


def _observed(at: float) -> datetime:
    return datetime.fromtimestamp(at, tz=UTC)


@transaction.atomic
def store_result(
    investigation: Investigation,
    result: InvestigationResult,
    topology: DependencyGraph | None = None,
    recall: Mapping[str, Any] | None = None,
    backends: Mapping[str, str] | None = None,
) -> None:
    """Write the result document (`rca.investigation.document`) into the investigation's row, with the
    fields, hypothesis and evidence rows and proposal taken from it, the dependency graph the engine saw
    and the recall it started from."""
    document = document_of(result)
    doc = document.to_json()
    outcome = doc["outcome"]
    investigation.hypotheses.all().delete()  # a re-run replaces what an interrupted run left
    investigation.proposals.all().delete()
    investigation.gate = doc["gate"]
    investigation.exit = (
        GateExit.CONFIDENT.value if result.confident else GateExit.NO_CONFIDENT_ROOT_CAUSE.value
    )
    investigation.raw_confidence = outcome["raw_confidence"]
    investigation.capped_confidence = outcome["capped_confidence"]
    investigation.grounding = outcome["grounding"]
    investigation.tier = outcome["tier"]
    investigation.outcome = outcome["kind"]
    investigation.root_cause_entity = result.root_cause.entity if result.root_cause else ""
    investigation.root_cause_kind = result.root_cause.fault_kind if result.root_cause else ""
    investigation.root_cause_detail = result.root_cause.detail if result.root_cause else ""
    investigation.candidates = doc["candidates"]
    investigation.propagation_path = doc["path"]
    investigation.evidence_chain = doc["chain"]
    investigation.beliefs = doc["beliefs"]
    investigation.progress = {"turn": result.turns, "steps": doc["steps"], "stop_reason": result.stop_reason}
    investigation.turns = result.turns
    investigation.tokens_in = result.tokens_in
    investigation.tokens_out = result.tokens_out
    investigation.cost_usd = result.cost_usd
    investigation.topology = topology.to_dict() if topology is not None else {}
    investigation.backends = dict(backends or {})
    investigation.guidance = doc["guidance"] or {}
    investigation.policy = result.policy
    investigation.policy_failure = result.policy_failure or ""
    investigation.policy_notes = list(result.policy_notes)
    investigation.recall = dict(recall or {})
    investigation.result_document = doc
    investigation.projected_at = None  # a re-run's result is projected and indexed again
    investigation.indexed_at = None
    investigation.status = Investigation.Status.SUCCEEDED
    investigation.finished_at = timezone.now()
    investigation.save()
    for rank, hypothesis in enumerate(result.hypotheses):
        row = Hypothesis.objects.create(
            investigation=investigation,
            key=hypothesis.id,
            entity=hypothesis.entity,
            fault_kind=hypothesis.fault_kind,
            detail=hypothesis.detail,
            parent_key=hypothesis.parent_id or "",
            state=hypothesis.state.value,
            prior=hypothesis.prior,
            rank=rank,
        )
        Evidence.objects.bulk_create(
            Evidence(
                hypothesis=row,
                seq=seq,
                tool=item.tool,
                target=hypothesis.entity,
                source=item.source.value,
                verdict=item.verdict.value,
                summary=item.summary,
                observed_at=_observed(item.observed_at),
                signals=dict(item.signals),
            )
            for seq, item in enumerate(hypothesis.evidence)
        )
    incident = investigation.incident
    exit_ = GateExit.CONFIDENT if result.confident else GateExit.NO_CONFIDENT_ROOT_CAUSE
    ActionProposal.objects.create(
        investigation=investigation,
        tier=outcome["tier"],
        max_allowed_tier=max_allowed_tier(
            exit_, result.chain.grounding, result.outcome.confidence.mode
        ).value,
        title=action_title(document, incident.symptom_entity or incident.title)[:300],
        body=action_body(document),
    )
    Incident.objects.filter(pk=incident.pk, status=Incident.Status.INVESTIGATING).update(
        status=Incident.Status.OPEN
    )
    record_audit(
        "investigation.succeeded",
        investigation,
        detail={
            "exit": investigation.exit,
            "tier": investigation.tier,
            "root_cause": investigation.root_cause_entity,
        },
    )
