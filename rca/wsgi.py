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

application = get_wsgi_application()
