"""The Celery application and its thin tasks."""

from celery_app.app import app

__all__ = ["app"]
