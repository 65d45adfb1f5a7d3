"""The result document of a stored investigation (`rca.investigation.document`): what the pages and the
API read, never the telemetry.

An investigation stored before the document existed (version 1) has its result only in its rows and
JSON fields; its document is rebuilt from them, with what they hold (no examined series, no hop
observations: the explorer then draws the graph and the path without a timeline).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rca.incidents.models import Investigation
from rca.investigation.document import (
    CandidateDoc,
    ChainDoc,
    EvidenceDoc,
    FactsDoc,
    GateDoc,
    GuidanceDoc,
    HopDoc,
    HypothesisDoc,
    OutcomeDoc,
    ResultDocument,
    StepDoc,
    TopologyDoc,
)

log = logging.getLogger(__name__)

LEGACY_VERSION = 1  # the result as the rows held it before the document
Part = TypeVar("Part", bound=BaseModel)


def result_document(investigation: Investigation) -> ResultDocument | None:
    """The investigation's result document; None until it has succeeded."""
    if investigation.status != Investigation.Status.SUCCEEDED:
        return None
    if investigation.result_document:
        return ResultDocument.model_validate(investigation.result_document)
    return legacy_document(investigation)


def legacy_document(investigation: Investigation) -> ResultDocument:
    """A document rebuilt from the rows of an investigation stored before documents existed. A part
    whose stored shape does not read is left out (and logged), so the rest still renders."""
    progress = investigation.progress if isinstance(investigation.progress, Mapping) else {}
    incident = investigation.incident
    candidates = _parts(CandidateDoc, investigation.candidates)
    named = investigation.named_root_cause()
    root = next((c for c in candidates if named and c.entity == named["entity"]), None)
    if named and root is None:
        root = CandidateDoc(entity=named["entity"], fault_kind=named["fault_kind"], detail=named["detail"])
    hypotheses = [
        HypothesisDoc(
            id=h.key,
            entity=h.entity,
            fault_kind=h.fault_kind,
            parent_id=h.parent_key or None,
            detail=h.detail,
            prior=h.prior,
            state=h.state,
            evidence=[
                EvidenceDoc(
                    tool=e.tool,
                    hypothesis=h.key,
                    summary=e.summary,
                    verdict=e.verdict,
                    source=e.source,
                    observed_at=e.observed_at.timestamp() if e.observed_at else None,
                    signals=_signals(e.signals),
                )
                for e in h.evidence.all()
            ],
        )
        for h in investigation.hypotheses.order_by("rank", "key").prefetch_related("evidence")
    ]
    return ResultDocument(
        version=LEGACY_VERSION,
        policy=investigation.policy,
        symptom=incident.symptom_entity,
        onset=incident.onset.timestamp(),
        gate=_part(GateDoc, investigation.gate) or GateDoc(),
        exit=investigation.exit if investigation.exit in ("confident", "no_confident_root_cause") else "",
        stop_reason=str(progress.get("stop_reason") or ""),
        turns=investigation.turns,
        hypotheses=hypotheses,
        candidates=candidates,
        root_cause=root,
        path=_parts(HopDoc, investigation.propagation_path),
        chain=_part(ChainDoc, investigation.evidence_chain) or ChainDoc(),
        outcome=OutcomeDoc(
            kind=investigation.outcome,
            tier=investigation.tier,
            raw_confidence=investigation.raw_confidence,
            capped_confidence=investigation.capped_confidence,
            grounding=investigation.grounding,
        ),
        beliefs={str(k): str(v) for k, v in (investigation.beliefs or {}).items()},
        steps=_parts(StepDoc, progress.get("steps")),
        tokens_in=investigation.tokens_in,
        tokens_out=investigation.tokens_out,
        cost_usd=float(investigation.cost_usd),
        policy_failure=investigation.policy_failure or None,
        policy_notes=[str(n) for n in investigation.policy_notes or []],
        guidance=_part(GuidanceDoc, investigation.guidance) if investigation.guidance else None,
        facts=FactsDoc(topology=_part(TopologyDoc, investigation.topology) or TopologyDoc()),
    )


def _signals(value: Any) -> dict[str, bool | int | float | str]:
    """Stored evidence signals, keeping the values a signal can hold."""
    items = value.items() if isinstance(value, Mapping) else ()
    return {str(k): v for k, v in items if isinstance(v, bool | int | float | str)}


def _part(model: type[Part], value: Any) -> Part | None:
    """`value` read as `model`; None when it is missing or does not read."""
    if not isinstance(value, Mapping) or not value:
        return None
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        log.warning("stored %s left out: %s", model.__name__, exc.errors()[:1])
        return None


def _parts(model: type[Part], values: Any) -> list[Part]:
    """Each item of a stored list read as `model`; items that do not read are left out."""
    out: list[Part] = []
    for value in values if isinstance(values, list) else []:
        try:
            out.append(model.model_validate(value))
        except ValidationError as exc:
            log.warning("stored %s left out: %s", model.__name__, exc.errors()[:1])
    return out
