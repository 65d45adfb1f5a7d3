"""Celery tasks. Each is thin: it calls a service and returns plain JSON-able data."""

from __future__ import annotations

from celery_app.app import app


@app.task(name="rootline.ping")
def ping(payload: str = "pong") -> dict[str, str]:
    """A round trip through the broker; used by health checks and tests."""
    return {"reply": payload}
