"""Request bodies for the API tests; Alertmanager payloads come from the intake tests' builders."""

from __future__ import annotations

import json
from typing import Any

from tests.integration.incidents.payloads import am_alert, am_payload

__all__ = ["am_alert", "am_payload", "body", "generic_alert"]


def generic_alert(**fields: Any) -> dict[str, Any]:
    """One alert in Rootline's canonical form (conventions §5.6)."""
    return {
        "source": "uptime-robot",
        "external_id": "check-42",
        "status": "firing",
        "title": "checkout down",
        "severity": "critical",
        "starts_at": "2024-05-01T10:00:00Z",
        "entity": {"service.name": "checkout"},
        **fields,
    }


def body(payload: Any) -> bytes:
    """The exact bytes sent (and signed)."""
    return json.dumps(payload).encode()
