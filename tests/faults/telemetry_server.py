"""Live telemetry backends for fault tests, as one real HTTP server process.

`python -m tests.integration.faults.telemetry_server PORT FAULT_START`: Prometheus paths
(`/api/v1/...`) answer at once (no owner references, metadata or instant results) with one CPU series
per service (flat, and for `carts` saturated from FAULT_START, epoch seconds); every other path (Loki's
`/loki/...`) is a backend that hangs: the request is read and then answered only long after any client
timeout. It prints "ready" once it listens and one line per request (so a test can count them).
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

HANG_S = 60.0
METRIC = "container_cpu_usage_ratio"
FAULTY = "carts"


def cpu(entity: str, at: float, fault_start: float) -> float:
    """The series' value: a busy-looking but steady level, saturated at the faulty service."""
    if entity == FAULTY and at >= fault_start:
        return 0.97
    return 0.2 + 0.02 * math.sin(at / 45.0)


class Backends(BaseHTTPRequestHandler):
    """Prometheus answered from `cpu`; anything else hangs."""

    fault_start = 0.0

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        print(f"GET {url.path}", flush=True)
        if not url.path.startswith("/api/v1/"):
            time.sleep(HANG_S)
            return
        query = parse_qs(url.query)
        data: Any
        if url.path.endswith("/values"):
            data = [METRIC]
        elif url.path.endswith(("/series", "/metadata")):
            data = [] if url.path.endswith("/series") else {}  # no owner references, no metadata
        elif url.path.endswith("/query"):
            data = {"resultType": "vector", "result": []}  # instant queries: the scrape probe finds none
        else:
            entity = re.search(r'service_name="([^"]+)"', query["query"][0])
            start, end, step = (float(query[k][0]) for k in ("start", "end", "step"))
            name = entity.group(1) if entity else "unknown"
            points = [
                [start + i * step, f"{cpu(name, start + i * step, self.fault_start):.4f}"]
                for i in range(int((end - start) // step) + 1)
            ]
            data = {
                "resultType": "matrix",
                "result": [{"metric": {"__name__": METRIC, "service_name": name}, "values": points}],
            }
        body = json.dumps({"status": "success", "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the request lines printed above are the log."""


def main() -> None:
    """Serve on 127.0.0.1:PORT until killed."""
    port, Backends.fault_start = int(sys.argv[1]), float(sys.argv[2])
    server = ThreadingHTTPServer(("127.0.0.1", port), Backends)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
