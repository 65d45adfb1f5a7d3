"""WSGI entry point (gunicorn rca.wsgi)."""

import os
import sys

from rca.config import ConfigError, load_config

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rca.settings")
try:
    load_config()
except ConfigError as exc:  # one clear line instead of a traceback at start
    sys.stderr.write(f"rootline: configuration error: {exc}\n")
    raise SystemExit(2) from None

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

application = get_wsgi_application()
# Every view imported now rather than by the first request (Django loads the URLconf lazily): about 3 s
# of CPU that would otherwise stall the first requests of each web process. gunicorn loads this module
# once, before it starts its worker processes (gunicorn.conf.py), so each starts ready.
get_resolver().url_patterns  # noqa: B018  (the attribute's loading is the point)
