"""The web server's start (gunicorn.conf.py, rca/wsgi.py): the application and every view are loaded
once, in the gunicorn master, before the worker processes fork, which is safe only if that loading
opens nothing the workers would then share."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# Run in a fresh interpreter: what importing rca.wsgi loaded and opened.
PROBE = """
import json, sys, threading
import psutil
import rca.wsgi
from django.db import connections
me = psutil.Process()
print(json.dumps({
    "views": [m for m in ("rca.api.views", "frontend.views") if m in sys.modules],
    "threads": threading.active_count(),
    "database_connections": sum(c.connection is not None for c in connections.all()),
    "sockets": len(me.net_connections()),
    "files": [f.path for f in me.open_files()],
}))
"""


def test_gunicorn_loads_the_application_before_it_forks_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROOTLINE_WEB_WORKERS", raising=False)
    monkeypatch.delenv("ROOTLINE_WEB_THREADS", raising=False)
    config = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    assert config["preload_app"] is True
    assert (config["workers"], config["threads"]) == (2, 8)


def test_loading_the_application_imports_every_view_and_opens_nothing(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "SECRET_KEY": "k" * 40,
        "ROOTLINE_VAR_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "rca.settings",
        "PYTHONWARNINGS": "ignore",
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {
        "views": ["rca.api.views", "frontend.views"],
        "threads": 1,
        "database_connections": 0,
        "sockets": 0,
        "files": [],
    }
