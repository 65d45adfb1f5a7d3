"""Incident and Investigation rows for memory tests, shaped as `rca.incidents.investigations` stores them."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime

from rca.incidents.models import Evidence, Hypothesis, Incident, Investigation

ONSET = datetime(2025, 3, 10, 14, 0, tzinfo=UTC)
_seq = itertools.count(1)


def make_incident(
    title: str,
    *,
    symptom: str,
    root: str = "",
    kind: str = "",
    path: Sequence[str] = (),
    tier: str = "patch",
    confident: bool = True,
    onset: datetime = ONSET,
    evidence: Sequence[str] = (),
    citation: str | None = None,
) -> tuple[Incident, Investigation]:
    """One incident with one finished investigation; `path` runs from the root cause to the symptom."""
    n = next(_seq)
    incident = Incident.objects.create(
        title=title,
        status=Incident.Status.RESOLVED,
        onset=onset,
        symptom_entity=symptom,
        fingerprint=f"mem-{n}",
        group_key=f"mem-group-{n}",
        source="generic",
    )
    chain_path = list(path) if confident else []
    investigation = Investigation.objects.create(
        incident=incident,
        attempt_key=f"{incident.pk}:1",
        status=Investigation.Status.SUCCEEDED,
        exit="confident" if confident else "no_confident_root_cause",
        tier=tier if confident else "notify",
        root_cause_entity=root if confident else "",
        root_cause_kind=kind if confident else "",
        propagation_path=[
            {"cause": c, "effect": e, "edge": True, "evidence": []} for c, e in itertools.pairwise(chain_path)
        ],
        evidence_chain={
            "entity": root if confident else None,
            "path": chain_path,
            "evidence": [
                {"tool": "metrics.query", "summary": s, "verdict": "supports", "source": "metrics"}
                for s in (evidence[:1] if confident else ())
            ],
            "citation": (
                {"kind": "commit", "ref": "9fceb02", "entity": root, "at": 0.0, "title": citation}
                if citation and confident
                else None
            ),
            "grounding": "grounded" if citation else "partially_grounded",
        },
    )
    hypothesis = Hypothesis.objects.create(
        investigation=investigation,
        key="h-1",
        entity=root or symptom,
        fault_kind=kind,
        state="validated" if confident else "inconclusive",
        rank=0,
    )
    Evidence.objects.bulk_create(
        Evidence(
            hypothesis=hypothesis,
            seq=i,
            tool="metrics.query",
            target=hypothesis.entity,
            source="metrics",
            verdict="supports" if confident else "inconclusive",
            summary=summary,
        )
        for i, summary in enumerate(evidence)
    )
    return incident, investigation
