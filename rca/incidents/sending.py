"""Handing tasks to the workers by name, without importing the Celery application.

Incidents sit below `celery_app` (tasks call services, never the reverse), so the tasks are looked up
in the registry of Celery's current application: `celery_app` is an installed Django app, so every
Django process (web, workers, management commands) has loaded it and made it the default.
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from celery.app.task import Task
from kombu.exceptions import OperationalError as BrokerError

# What publishing raises when the broker is down: kombu's error, or the socket's own.
BROKER_ERRORS: tuple[type[Exception], ...] = (BrokerError, OSError)


class TaskMissing(LookupError):
    """No task of that name is registered in this process (the Celery app was not loaded)."""


def registered(name: str) -> Task[Any, Any] | None:
    """The task called `name` in the current app's registry, or None."""
    task: Task[Any, Any] | None = current_app.tasks.get(name)
    return task


def send(name: str, *args: Any) -> None:
    """Publish task `name` with `args` once, without retrying (a dead broker raises BROKER_ERRORS at
    once, so no request waits on it); eager mode runs it in-process."""
    task = registered(name)
    if task is None:
        raise TaskMissing(f"no {name} task is registered in this process")
    task.apply_async(args, retry=False)
