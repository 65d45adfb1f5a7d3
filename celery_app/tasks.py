"""Celery tasks. Each is thin: it calls a service and returns plain JSON-able data.

Tasks acknowledge late and are rejected (so redelivered) when their worker dies; the services they
call are idempotent, so a redelivery stores one result.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import InterfaceError, OperationalError

from celery_app.app import app

log = logging.getLogger(__name__)

RELIABLE: dict[str, Any] = {"acks_late": True, "reject_on_worker_lost": True}


@app.task(name="rootline.ping")
def ping(payload: str = "pong") -> dict[str, str]:
    """A round trip through the broker; used by health checks and tests."""
    return {"reply": payload}


@app.task(
    name="rootline.investigate",
    autoretry_for=(OperationalError, InterfaceError),  # the database restarting under us
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=8,
    **RELIABLE,
)
def investigate(investigation_id: int) -> dict[str, Any]:
    """Run one investigation, then project it into the graph and index the incident in memory."""
    from rca.incidents.investigations import run_investigation
    from rca.incidents.models import Investigation

    try:
        investigation = run_investigation(investigation_id)
    except Investigation.DoesNotExist:
        log.warning("investigation %s no longer exists; nothing to do", investigation_id)
        return {"investigation": investigation_id, "status": "missing"}
    return {"investigation": investigation.pk, "status": investigation.status, "exit": investigation.exit}
