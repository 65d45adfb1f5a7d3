"""Relational rows for graph tests: an incident and finished investigations of it.

The default story: `checkout` (the symptom, namespace `shop`) fails because `db` does; the path is
db -> payment -> checkout, one hypothesis per service, evidence spread over them round-robin.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from rca.incidents.models import Alert, Evidence, Hypothesis, Incident, Investigation

ONSET = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
_serial = itertools.count(1)


def make_incident(
    symptom: str = "checkout", namespace: str | None = "shop", title: str = "checkout 5xx above 5%"
) -> Incident:
    """An incident with one firing alert whose OpenTelemetry identity names `symptom` (and namespace)."""
    n = next(_serial)
    incident = Incident.objects.create(
        title=title,
        onset=ONSET + timedelta(hours=n),
        symptom_entity=symptom,
        fingerprint=f"fp-{n}",
        group_key=f"group-{n}",
        source="alertmanager",
        severity="critical",
    )
    entity = {"service.name": symptom, **({"service.namespace": namespace} if namespace else {})}
    Alert.objects.create(
        incident=incident,
        source="alertmanager",
        fingerprint=f"fp-{n}",
        entity=entity,
        labels={"alertname": "HighErrorRate"},
        starts_at=incident.onset,
        raw={"labels": {"alertname": "HighErrorRate"}},
    )
    return incident


def make_investigation(
    incident: Incident,
    *,
    confident: bool = True,
    path: Sequence[str] = ("db", "payment", "checkout"),
    evidence: int = 6,
    finished_at: datetime | None = None,
    status: str = Investigation.Status.SUCCEEDED,
    citation: bool = True,
) -> Investigation:
    """A finished investigation of `incident` along `path` (root cause first, symptom last)."""
    attempt = incident.investigations.count() + 1
    root = path[0]
    investigation = Investigation.objects.create(
        incident=incident,
        attempt_key=f"{incident.pk}:{attempt}",
        status=status,
        started_at=ONSET,
        finished_at=finished_at or (ONSET + timedelta(minutes=attempt)),
        gate={
            "state": "exit" if confident else "stop",
            "exit": "confident" if confident else "no_confident_root_cause",
            "reason": "a hypothesis is validated" if confident else "budget spent",
            "root_cause": f"h-{root}" if confident else None,
        },
        exit="confident" if confident else "no_confident_root_cause",
        raw_confidence=0.9 if confident else 0.2,
        capped_confidence=0.84 if confident else 0.2,
        grounding="grounded" if confident and citation else "ungrounded",
        tier="patch" if confident else "notify",
        outcome="root_cause" if confident else "no_confident_root_cause",
        root_cause_entity=root if confident else "",
        root_cause_kind="latency" if confident else "",
        candidates=[
            {"entity": name, "fault_kind": "latency", "score": 1.0 - i / 10, "belief": "origin"}
            for i, name in enumerate(path)
        ],
        propagation_path=(
            [
                {
                    "cause": cause,
                    "effect": effect,
                    "edge": True,
                    "evidence": [f"{cause} p99 up 4x", f"{effect} errors follow {cause}"],
                }
                for cause, effect in itertools.pairwise(path)
            ]
            if confident
            else []
        ),
        evidence_chain={
            "entity": root if confident else None,
            "path": list(path) if confident else [],
            "evidence": [],
            "citation": (
                {
                    "kind": "commit",
                    "ref": "9fceb02",
                    "entity": root,
                    "at": (ONSET - timedelta(minutes=5)).timestamp(),
                    "title": "bump connection pool",
                }
                if confident and citation
                else None
            ),
            "grounding": "grounded" if confident and citation else "ungrounded",
        },
    )
    rows = [
        Hypothesis.objects.create(
            investigation=investigation,
            key=f"h-{name}",
            entity=name,
            fault_kind="latency",
            state="validated" if confident and name == root else "inconclusive",
            prior=0.5,
            rank=rank,
        )
        for rank, name in enumerate(path)
    ]
    Evidence.objects.bulk_create(
        Evidence(
            hypothesis=rows[i % len(rows)],
            seq=i // len(rows),
            tool="metrics.query",
            target=rows[i % len(rows)].entity,
            source="metrics",
            verdict="supports" if i % len(rows) == 0 and confident else "inconclusive",
            summary=f"item {i}: p99 latency of {rows[i % len(rows)].entity} at {400 + i} ms",
            observed_at=ONSET + timedelta(seconds=i),
        )
        for i in range(evidence)
    )
    return investigation


def graph_counts(driver: Any, database: str) -> tuple[dict[str, int], dict[str, int]]:
    """Nodes per label and relationships per type, as the server counts them."""
    nodes = driver.execute_query(
        "MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS c", database_=database
    ).records
    rels = driver.execute_query(
        "MATCH ()-[r]->() RETURN type(r) AS t, count(*) AS c", database_=database
    ).records
    return {r["label"]: r["c"] for r in nodes}, {r["t"]: r["c"] for r in rels}
