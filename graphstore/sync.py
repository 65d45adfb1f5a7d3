"""Project investigations from the relational database: one at a time (the Celery task) or all of
them (`manage.py sync_graph`), so the graph can always be rebuilt from the source of truth."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from django.db.models import OuterRef, QuerySet, Subquery
from django.utils import timezone
from neo4j import Driver

from graphstore.document import document_for
from graphstore.projection import ProjectionReport, project, prune
from graphstore.schema import ensure_schema
from rca.incidents.models import Investigation
from rca.telemetry.model import DependencyGraph


def latest_finished(since: datetime | None = None) -> QuerySet[Investigation]:
    """Each incident's latest finished investigation, optionally only those finished at or after `since`."""
    finished = Investigation.objects.filter(status=Investigation.Status.SUCCEEDED, finished_at__isnull=False)
    # A correlated subquery rather than DISTINCT ON: it runs on SQLite (the embedded default) too.
    latest = finished.filter(incident=OuterRef("incident")).order_by("-finished_at", "-pk").values("pk")[:1]
    chosen = finished.filter(pk=Subquery(latest))
    if since is not None:
        chosen = chosen.filter(finished_at__gte=since)
    return chosen.select_related("incident").order_by("incident_id")


def project_investigation(
    investigation: Investigation,
    topology: DependencyGraph | None = None,
    driver: Driver | None = None,
    database: str | None = None,
) -> ProjectionReport:
    """Project the incident of `investigation` as its latest finished investigation shows it.

    A late or redelivered task for an older investigation therefore cannot overwrite a newer one's
    projection: it projects the newer one again (harmless, idempotent). Creates the schema first if
    this process has not yet. Raises ValueError when the incident has no finished investigation.
    """
    latest = latest_finished().filter(incident_id=investigation.incident_id).first()
    if latest is None:
        raise ValueError(f"incident {investigation.incident_id} has no finished investigation to project")
    ensure_schema(driver, database)
    report = project(document_for(latest, topology), driver, database)
    Investigation.objects.filter(pk=latest.pk).update(projected_at=timezone.now())
    return report


@dataclass
class SyncReport:
    """What a rebuild projected."""

    incidents: int = 0
    hypotheses: int = 0
    evidence: int = 0
    root_causes: int = 0
    hops: int = 0
    pruned: int = 0  # incidents removed from the graph because no finished investigation backs them
    statements: int = 0
    elapsed_s: float = 0.0


def rebuild(
    since: datetime | None = None, driver: Driver | None = None, database: str | None = None
) -> SyncReport:
    """Re-project each incident's latest finished investigation (only those finished since `since`).

    A full rebuild (no `since`) also prunes incidents the relational database no longer backs.
    Each incident is its own transaction: a failure part-way leaves the earlier ones projected, and
    running the rebuild again is harmless.
    """
    started = time.perf_counter()
    report = SyncReport()
    ensure_schema(driver, database, force=True)  # the server may have been replaced since we last looked
    projected: list[int] = []
    for investigation in latest_finished(since).iterator(chunk_size=100):
        document = document_for(investigation)
        result = project(document, driver, database)
        Investigation.objects.filter(pk=investigation.pk).update(projected_at=timezone.now())
        projected.append(document.incident.id)
        report.incidents += 1
        report.hypotheses += len(document.hypotheses)
        report.evidence += len(document.evidence)
        report.root_causes += document.root_cause is not None
        report.hops += len(document.hops)
        report.statements += result.statements
    if since is None:
        report.pruned = prune(projected, driver, database)
        report.statements += 1
    report.elapsed_s = time.perf_counter() - started
    return report
