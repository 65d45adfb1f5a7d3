"""Shared by the HTTP benches (intake, storm, soak): a whole Rootline on loopback, alert payloads, RSS.

`running_stack` brings up, each on free 127.0.0.1 ports and in a temporary folder removed afterwards: a fresh
PostgreSQL database (created and migrated), its own `redis-server` (so concurrent benches never share
a broker), gunicorn (gunicorn.conf.py, as `dev.py run`), and with `workers` > 0 the production
back end of `dev.py run`: an ArcadeDB graph server, one Celery worker investigating with a prefork
pool of `workers` processes, and the memory worker (the one process that opens the Qdrant local
store; the others reach it through the `memory` queue). Django is set up in this process on the same
database, so a bench can count rows.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
MB = 1024 * 1024
# A broker that is thrown away: no snapshots, no append-only file.
REDIS_FLAGS = ("--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
GUNICORN_FLAGS = ("--log-level", "warning")  # processes and threads: gunicorn.conf.py, as dev.py run
CELERY_FLAGS = ("--loglevel=INFO", "--without-mingle", "--without-gossip")
GRAPH_HEAP = "512m"  # the graph server's JVM heap, committed whole at start (see running_stack)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, what: str, timeout: float = 60.0) -> None:
    """Wait until something listens on 127.0.0.1:`port`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"{what} did not start on port {port}")


def alert(n: int, services: int = 40) -> dict[str, Any]:
    """Alertmanager alert number `n` (its fingerprint is `n` in hex), on one of `services` services."""
    return {
        "status": "firing",
        "labels": {
            "alertname": "HighErrorRate",
            "severity": "critical",
            "job": f"shop/svc-{n % services}",
            "n": str(n),
        },
        "annotations": {"summary": f"svc-{n % services} 5xx above 5%"},
        "startsAt": "2024-05-01T10:00:00.123Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus:9090/graph",
        "fingerprint": f"{n:016x}",
    }


def payload(group: int, alerts: list[dict[str, Any]]) -> bytes:
    """An Alertmanager v4 webhook body delivering `alerts` as group number `group`."""
    return json.dumps(
        {
            "version": "4",
            "groupKey": f'{{}}/{{severity="critical"}}:{{batch="{group}"}}',
            "truncatedAlerts": 0,
            "status": "firing",
            "receiver": "rootline",
            "groupLabels": {"batch": str(group)},
            "commonLabels": {"severity": "critical"},
            "commonAnnotations": {},
            "externalURL": "http://alertmanager:9093",
            "alerts": alerts,
        }
    ).encode()


def _tree(pid: int) -> list[psutil.Process]:
    """Process `pid` and all its descendants (none once it has exited)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def tree_rss(pid: int) -> int:
    """Resident memory of process `pid` and all its descendants, in bytes (0 once it has exited)."""
    total = 0
    for proc in _tree(pid):
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            continue  # a child that exited between listing and reading
    return total


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by process `pid` and its living descendants."""
    total = 0.0
    for proc in _tree(pid):
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def web_workers(pid: int) -> int:
    """How many worker processes the gunicorn master `pid` runs (gunicorn.conf.py decides)."""
    return max(0, len(_tree(pid)) - 1)


def tree_handles(pid: int) -> tuple[int, int]:
    """(threads, open file descriptors) of process `pid` and its descendants ((0, 0) once it has exited).

    Sockets are file descriptors, so a client that leaks connections shows here on the server side."""
    threads = fds = 0
    for proc in _tree(pid):
        try:
            threads += proc.num_threads()
            fds += proc.num_fds()
        except psutil.NoSuchProcess:
            continue
    return threads, fds


@dataclass
class Stack:
    """The running processes of one bench and how to reach them (see the module docstring)."""

    workers: int = 0
    url: str = ""
    token: str = ""
    processes: dict[str, int] = field(default_factory=dict)  # role -> root PID, for RSS sampling

    @property
    def intake_url(self) -> str:
        """The Alertmanager webhook."""
        return f"{self.url}/api/v1/webhooks/alertmanager/"

    def post(self, body: bytes) -> dict[str, Any]:
        """Deliver one webhook body; anything but 202 stops the bench with the server's answer."""
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        with httpx.Client(timeout=60) as client:
            response = client.post(self.intake_url, content=body, headers=headers)
        if response.status_code != 202:
            raise SystemExit(f"intake answered {response.status_code}: {response.text[:300]}")
        return dict(response.json())

    def rss_mb(self) -> dict[str, float]:
        """Each role's resident memory now (the process and its children), in MB."""
        return {role: tree_rss(pid) / MB for role, pid in self.processes.items()}

    def handles(self) -> dict[str, tuple[int, int]]:
        """Each role's (threads, open file descriptors) now, the process and its children."""
        return {role: tree_handles(pid) for role, pid in self.processes.items()}

    def describe(self) -> str:
        """One line on what runs, for the bench's header."""
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        back = (
            f"1 Celery worker investigating with {self.workers} prefork processes + the memory worker, "
            "ArcadeDB graph server"
            if self.workers
            else "no worker (investigations stay queued)"
        )
        return (
            f"gunicorn with {web_workers(self.processes['web'])} worker processes, {back}; PostgreSQL, "
            "own redis-server; machine: "
            f"{os.cpu_count()} CPUs shared with other users, load average {load}"
        )


def _run(*cmd: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(cmd, cwd=REPO, env=env, check=True)


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, stopped as a whole below
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextmanager
def running_stack(database: str, workers: int = 0) -> Iterator[Stack]:
    """Bring the stack up (see the module docstring), yield it, and stop everything on the way out."""
    tmp = Path(tempfile.mkdtemp(prefix=f"rootline-{database}-"))
    procs: list[subprocess.Popen[bytes]] = []
    graph_server = None
    try:
        redis_port = free_port()
        procs.append(
            _start(
                ["redis-server", "--port", str(redis_port), "--dir", str(tmp), *REDIS_FLAGS],
                dict(os.environ),
                tmp / "redis.log",
            )
        )
        wait_port(redis_port, "redis-server")
        env = dict(os.environ)
        env.update(
            DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{database}",
            REDIS_URL=f"redis://127.0.0.1:{redis_port}/0",
            SECRET_KEY=env.get("SECRET_KEY", "bench-only-secret-key-" + "x" * 32),
            ROOTLINE_VAR_DIR=str(tmp / "var"),
            QDRANT_PATH=str(tmp / "qdrant"),
            ROOTLINE_GRAPH_PORT=str(free_port()),
            ROOTLINE_GRAPH_HTTP_PORT=str(free_port()),
            ROOTLINE_MEMORY_VIA_WORKER="true",
            # The benches measure what intake can take, not the per-token limit (1200/min by default).
            ROOTLINE_INTAKE_RATE="1000000/min",
            PYTHONUNBUFFERED="1",
        )
        env.pop("NEO4J_URI", None)  # the embedded graph server started below
        os.environ.update(env)
        _run("dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", database)
        _run("createdb", "-h", "127.0.0.1", "-U", "postgres", database)
        _run(sys.executable, "manage.py", "migrate", "--noinput", "-v", "0", env=env)

        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rca.settings")
        django.setup()
        # The driver logs each refused connection while ArcadeDB starts: noise in the bench's output.
        logging.getLogger("neo4j").setLevel(logging.ERROR)
        from django.conf import settings

        from graphstore.launcher import ArcadeServer
        from rca.incidents.tokens import issue_token

        stack = Stack(workers=workers)
        stack.token = issue_token("bench", "alertmanager").token
        port = free_port()
        web = _start(
            [sys.executable, "-m", "gunicorn", "rca.wsgi", "--bind", f"127.0.0.1:{port}", *GUNICORN_FLAGS],
            env,
            tmp / "web.log",
        )
        procs.append(web)
        stack.processes["web"] = web.pid
        if workers:
            graph = settings.ROOTLINE_GRAPH
            graph_server = ArcadeServer(
                root=tmp / "arcadedb",
                bolt_port=int(env["ROOTLINE_GRAPH_PORT"]),
                http_port=int(env["ROOTLINE_GRAPH_HTTP_PORT"]),
                password=graph.password,
                database=graph.database,
                heap=GRAPH_HEAP,
                # The whole heap committed and touched at start: a JVM's RSS otherwise grows while it
                # expands its heap toward -Xmx, which a soak would report as a trend. Neo4j's manual
                # also sets the initial heap to the maximum in production.
                jvm_options=(f"-Xms{GRAPH_HEAP}", "-XX:+AlwaysPreTouch"),
            )
            stack.processes["graph"] = graph_server.start()
            celery = [sys.executable, "-m", "celery", "-A", "celery_app", "worker", *CELERY_FLAGS]
            investigating = _start(
                [*celery, "--queues=celery", f"--concurrency={workers}", "-n", "bench@%h"],
                env,
                tmp / "worker.log",
            )
            memory = _start(
                [*celery, "--queues=memory", "--pool=solo", "-n", "bench-memory@%h"],
                {**env, "ROOTLINE_MEMORY_VIA_WORKER": "false"},
                tmp / "memory-worker.log",
            )
            procs += [investigating, memory]
            stack.processes["worker"] = investigating.pid
            stack.processes["memory worker"] = memory.pid
            # Measure from a ready back end: one round trip through each queue.
            from celery_app.tasks import memory_status, ping

            ping.delay().get(timeout=180)
            memory_status.delay().get(timeout=180)
        wait_port(port, "gunicorn")
        stack.url = f"http://127.0.0.1:{port}"
        with httpx.Client(timeout=60) as warm:
            warm.get(f"{stack.url}/login/")
        yield stack
    finally:
        for proc in reversed(procs):
            _stop(proc)
        if graph_server is not None:
            graph_server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def wait_drained(expected: int, timeout: float) -> tuple[float, float]:
    """Wait until `expected` investigations have finished (succeeded or failed), then until each is
    projected into the graph and indexed in memory; the epoch times the last investigation finished
    and the last of those later steps did. Stops the bench if that takes over `timeout` seconds."""
    from django.db.models import Max

    from rca.incidents.models import Investigation

    finished = Investigation.objects.filter(
        status__in=(Investigation.Status.SUCCEEDED, Investigation.Status.FAILED)
    )
    stored = finished.exclude(projected_at=None).exclude(indexed_at=None)
    deadline = time.monotonic() + timeout
    for what in (finished, stored):
        while what.count() < expected:
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"only {what.count()} of {expected} investigations drained in {timeout:.0f} s"
                )
            time.sleep(0.5)
    last = stored.aggregate(f=Max("finished_at"), p=Max("projected_at"), i=Max("indexed_at"))
    return last["f"].timestamp(), max(last["p"], last["i"]).timestamp()


def integrity(sent: int, groups: int) -> tuple[bool, list[str]]:
    """Whether every fingerprint is stored exactly once and each group has one incident and one
    investigation; with the lines that say so."""
    from rca.incidents.models import Alert, Incident, Investigation

    fingerprints = list(Alert.objects.values_list("fingerprint", flat=True))
    distinct = len(set(fingerprints))
    incidents = Incident.objects.count()
    incident_groups = Incident.objects.values("group_key").distinct().count()
    investigations = Investigation.objects.count()
    ok = len(fingerprints) == distinct == sent and incidents == incident_groups == investigations == groups
    return ok, [
        f"alerts stored: {len(fingerprints)} rows, {distinct} distinct fingerprints (sent {sent}): "
        f"lost {sent - distinct}, duplicated {len(fingerprints) - distinct}",
        f"incidents: {incidents} for {incident_groups} group keys (groups sent {groups}); "
        f"investigations: {investigations}",
    ]


def investigations_summary() -> list[str]:
    """What the finished investigations did: status, gate exit and outcome counts, turns, evidence."""
    from django.db.models import Count

    from rca.incidents.models import Evidence, Investigation

    rows = Investigation.objects.values("status", "exit", "outcome").annotate(n=Count("id"))
    turns = list(Investigation.objects.values_list("turns", flat=True))
    durations = [
        (finished - started).total_seconds()
        for started, finished in Investigation.objects.values_list("started_at", "finished_at")
        if started and finished
    ]
    evidence = Evidence.objects.values("tool").annotate(n=Count("id")).order_by("-n")
    notes = Counter(
        f"recall: {recall.get('note', '-')}; gate: {gate.get('reason', '-')}"
        for recall, gate in Investigation.objects.values_list("recall", "gate")
    )
    lines = [
        ", ".join(
            f"{r['n']} {r['status']} (exit {r['exit'] or '-'}, outcome {r['outcome'] or '-'})" for r in rows
        ),
        *(f"{n} x {note}" for note, n in notes.most_common(3)),
        f"turns per investigation: mean {statistics.fmean(turns or [0]):.1f}, max {max(turns or [0])}; "
        f"duration in the worker: median {statistics.median(durations or [0]) * 1000:.0f} ms, "
        f"max {max(durations or [0]) * 1000:.0f} ms",
        "evidence items by tool: " + (", ".join(f"{e['tool']} {e['n']}" for e in evidence) or "none"),
    ]
    return lines
