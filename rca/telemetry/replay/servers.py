"""Start the replayed cluster's servers: Debian's Prometheus and Alertmanager binaries on a loopback port
with their own data folders, never the system services (`dev.py test` installs the packages).

Used by the test suite's fixtures (tests/live) and by `bench/bench_replay.py`, as graphstore.launcher
starts ArcadeDB for both.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

PROMETHEUS = "prometheus"
ALERTMANAGER = "prometheus-alertmanager"
READY_WITHIN = 30.0  # both answer /-/ready within a few seconds here; a loaded machine gets room


class ServerError(RuntimeError):
    """A server did not start; the message carries the end of its log."""


@dataclass
class Server:
    """One running server process and where it listens."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    _log_handle: IO[bytes] = field(repr=False)

    @property
    def url(self) -> str:
        """The base URL."""
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, **params: Any) -> Any:
        """GET `path` and return the JSON body."""
        response = httpx.get(self.url + path, params=params, timeout=10.0)
        response.raise_for_status()
        return response.json()

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the server's log."""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Terminate the process (SIGTERM, then SIGKILL after 10 s) and close its log."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log_handle.close()


def binary(name: str) -> str:
    """The path of a server binary, or ServerError saying how to get it."""
    found = shutil.which(name)
    if found is None:
        raise ServerError(f"{name} is not installed (python3 dev.py test installs Debian's package with apt)")
    return found


def _start(name: str, args: list[str], port: int, folder: Path) -> Server:
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"{name}.log"
    handle = log.open("wb")
    command = [binary(name), *args]
    process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)  # noqa: S603  (no shell)
    server = Server(name, port, process, log, handle)
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        if process.poll() is not None:
            server.stop()
            raise ServerError(f"{name} exited with {process.returncode}:\n{server.log_tail()}")
        try:
            if httpx.get(f"{server.url}/-/ready", timeout=1.0).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    server.stop()
    raise ServerError(
        f"{name} was not ready on port {port} within {READY_WITHIN:.0f} s:\n{server.log_tail()}"
    )


def start_prometheus(
    config: Path, tsdb: Path, port: int, folder: Path, flags: dict[str, str] | None = None
) -> Server:
    """Prometheus on 127.0.0.1:`port` over the data dir `tsdb`, logging into `folder`."""
    args = [
        f"--config.file={config}",
        f"--storage.tsdb.path={tsdb}",
        f"--web.listen-address=127.0.0.1:{port}",
        *(f"{k}={v}" for k, v in (flags or {}).items()),
    ]
    return _start(PROMETHEUS, args, port, folder)


def start_alertmanager(config: Path, port: int, folder: Path) -> Server:
    """Alertmanager on 127.0.0.1:`port`, its state in `folder`, no cluster (gossip) port."""
    args = [
        f"--config.file={config}",
        f"--storage.path={folder / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
    ]
    return _start(ALERTMANAGER, args, port, folder)
