"""The Celery application; broker and result backend come from REDIS_URL via Django settings."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rca.settings")

app = Celery("rootline")
app.config_from_object("django.conf:settings", namespace="CELERY")
# The default in every thread of every process: the domain sends tasks by name through Celery's
# current app (rca.incidents.sending) and never imports this package; Django loads it as an app.
app.set_default()
# Imported at once (not lazily) so web processes can look tasks up by name in the registry.
app.autodiscover_tasks(["celery_app"], force=True)
