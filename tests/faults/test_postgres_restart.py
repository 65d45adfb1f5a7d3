"""PostgreSQL restarted mid-investigation: the task fails on the dead connection, is retried with
backoff once the server is back, and the investigation completes exactly once.

The test runs its own PostgreSQL cluster (never the machine's shared server). The worker is the real
one, paused once just before it stores the result (`worker_app`): the test stops the server there,
lets the worker write into the dead connection, waits for the retry to be scheduled, and starts
the server again.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import DatabaseError, connections

from celery_app.app import app
from rca.incidents.models import AuditEvent, Evidence, Hypothesis, Incident, Investigation
from tests.conftest import REPO_ROOT
from tests.faults.postgres import PrivatePostgres, server_bin
from tests.faults.worker_app import purge_parked
from tests.integration.pipeline.worker import start_worker, stop, wait_for, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
CASE = ("rcd-sockshop", "rcd/carts-cpu/1")  # a dev case the engine explains confidently: carts
ALIAS = "private"  # this process's connection to the test's own cluster


@pytest.fixture
def cluster(django_db_blocker: pytest.FixtureRequest) -> Iterator[PrivatePostgres]:
    """A migrated private cluster, reachable from this process as the database alias `private`."""
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    bin_dir = server_bin()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql")
    pg = PrivatePostgres(bin_dir)
    try:
        pg.init()
        connections.settings[ALIAS] = {
            **connections["default"].settings_dict,
            **{"NAME": "rootline", "HOST": "127.0.0.1", "PORT": str(pg.port), "USER": "postgres"},
            "PASSWORD": "",
        }
        with django_db_blocker.unblock():  # type: ignore[attr-defined]
            yield pg
            connections[ALIAS].close()
    finally:
        connections.settings.pop(ALIAS, None)
        if hasattr(connections._connections, ALIAS):
            delattr(connections._connections, ALIAS)
        pg.remove()


def _migrate_and_import(env: dict[str, str]) -> None:
    """Migrate the private database and import the case into it, in one process (one Django start)."""
    script = (
        "from django.core.management import call_command as c; "
        "c('migrate', verbosity=0); "
        f"c('import_case', {CASE[0]!r}, {CASE[1]!r}, '--data', {str(DATA)!r}, verbosity=0)"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _succeeded(pk: int) -> bool:
    try:
        return Investigation.objects.using(ALIAS).filter(pk=pk, status="succeeded").exists()
    except DatabaseError:  # this process's connection died with the restart: open a new one
        connections[ALIAS].close()
        return False


def test_postgres_restarted_mid_investigation_completes_once(
    tmp_path: Path, cluster: PrivatePostgres
) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    env = worker_env(
        DATABASE_URL=cluster.url(),
        ROOTLINE_TEST_PARK="rootline.project_graph,rootline.index_memory",  # not under test here
        ROOTLINE_TEST_PAUSE_DIR=str(gate),
    )
    app.control.purge()
    _migrate_and_import(env)
    db = Investigation.objects.using(ALIAS)
    investigation = db.get(incident__recorded_case__case_id=CASE[1])
    log = tmp_path / "worker.log"
    worker = start_worker(log, "pgrestart", env=env, app="tests.faults.worker_app")
    try:
        wait_for(lambda: (gate / "reached").exists(), 120, "the worker to finish investigating")
        assert db.get(pk=investigation.pk).status == "running"
        connections[ALIAS].close()
        cluster.stop()  # the worker's connection dies with the server
        (gate / "go").touch()
        wait_for(lambda: "Retry in" in log.read_text(), 60, "the failed task to be scheduled again")
        cluster.start()
        wait_for(lambda: _succeeded(investigation.pk), 120, "the retried investigation")
    finally:
        stop(worker)
        purge_parked()
    text = log.read_text()
    assert "OperationalError" in text or "InterfaceError" in text  # the restart was really hit

    investigation = db.get(pk=investigation.pk)
    incident = Incident.objects.using(ALIAS).get(pk=investigation.incident_id)
    assert Investigation.objects.using(ALIAS).filter(incident=incident).count() == 1
    assert investigation.exit == "confident"
    assert investigation.root_cause_entity == "carts"
    assert investigation.error == ""
    keys = list(
        Hypothesis.objects.using(ALIAS).filter(investigation=investigation).values_list("key", flat=True)
    )
    assert keys
    assert len(keys) == len(set(keys))  # no hypothesis stored twice
    evidence = Evidence.objects.using(ALIAS).filter(hypothesis__investigation=investigation)
    assert evidence.exists()
    assert len(set(evidence.values_list("hypothesis_id", "seq"))) == evidence.count()
    assert investigation.proposals.using(ALIAS).count() == 1
    audit = AuditEvent.objects.using(ALIAS).filter(target_id=str(investigation.pk))
    assert audit.filter(verb="investigation.succeeded").count() == 1
    assert not audit.filter(verb="investigation.failed").exists()
    assert incident.status == Incident.Status.OPEN
