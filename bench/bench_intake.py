"""Benchmark: Alertmanager webhook intake throughput over loopback, deduplicated.

Usage: .venv/bin/python bench/bench_intake.py [--alerts N] [--batch N] [--senders N]

Starts gunicorn (the production server, 1 worker x 8 threads as `dev.py run` does) on a free
127.0.0.1 port against its own PostgreSQL database (`bench_intake`, created and migrated here) and
Redis db 13, issues an intake token, then POSTs Alertmanager v4 batches: every alert once, then every
batch again (Alertmanager re-sends firing alerts). Prints alerts accepted per second for each pass and
checks that every fingerprint is stored exactly once and that re-sends opened no incident. Queued
investigations are left unrun (no worker) and purged at the end. Target: >= 500 alerts/s.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATABASE = "bench_intake"
TARGET = 500.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{DATABASE}",
        REDIS_URL="redis://127.0.0.1:6379/13",
        SECRET_KEY=env.get("SECRET_KEY", "bench-only-secret-key-" + "x" * 32),
        ROOTLINE_VAR_DIR=str(REPO / "var" / "bench"),
    )
    return env


def alert(n: int) -> dict[str, Any]:
    return {
        "status": "firing",
        "labels": {
            "alertname": "HighErrorRate",
            "severity": "critical",
            "job": f"shop/svc-{n % 40}",
            "n": str(n),
        },
        "annotations": {"summary": f"svc-{n % 40} 5xx above 5%"},
        "startsAt": "2024-05-01T10:00:00.123Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus:9090/graph",
        "fingerprint": f"{n:016x}",
    }


def payload(batch: int, alerts: list[dict[str, Any]]) -> bytes:
    return json.dumps(
        {
            "version": "4",
            "groupKey": f'{{}}/{{severity="critical"}}:{{batch="{batch}"}}',
            "truncatedAlerts": 0,
            "status": "firing",
            "receiver": "rootline",
            "groupLabels": {"batch": str(batch)},
            "commonLabels": {"severity": "critical"},
            "commonAnnotations": {},
            "externalURL": "http://alertmanager:9093",
            "alerts": alerts,
        }
    ).encode()


def wait_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit("gunicorn did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alerts", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--senders", type=int, default=4, help="concurrent HTTP senders")
    args = parser.parse_args()
    env = environment()
    os.environ.update(env)
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", DATABASE], check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DATABASE], check=True)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rca.settings")
    django.setup()
    from celery_app.app import app
    from rca.incidents.models import Alert, Incident
    from rca.incidents.tokens import issue_token

    token = issue_token("bench", "alertmanager").token
    port = free_port()
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "rca.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "8",
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
    )
    try:
        wait_port(port)
        url = f"http://127.0.0.1:{port}/api/v1/webhooks/alertmanager/"
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        alerts = [alert(n) for n in range(args.alerts)]
        bodies = [
            payload(i, alerts[start : start + args.batch])
            for i, start in enumerate(range(0, args.alerts, args.batch))
        ]
        with httpx.Client(timeout=60) as warm:
            warm.get(f"http://127.0.0.1:{port}/login/")

        def send(body: bytes) -> dict[str, Any]:
            with httpx.Client(timeout=60) as client:
                response = client.post(url, content=body, headers=headers)
            if response.status_code != 202:
                raise SystemExit(f"intake answered {response.status_code}: {response.text[:300]}")
            return dict(response.json())

        print(
            f"{args.alerts} alerts in {len(bodies)} batches of {args.batch}, {args.senders} concurrent "
            "senders, gunicorn 1 worker x 8 threads, PostgreSQL, Redis broker"
        )
        rates = {}
        for name in ("first delivery", "re-send (duplicates)"):
            started = time.perf_counter()
            with ThreadPoolExecutor(args.senders) as pool:
                results = list(pool.map(send, bodies))
            took = time.perf_counter() - started
            rates[name] = args.alerts / took
            stored = sum(r["alerts_stored"] for r in results)
            duplicates = sum(r["duplicates"] for r in results)
            print(
                f"  {name:22s} {rates[name]:8.0f} alerts/s  "
                f"({took:.2f} s; stored {stored}, duplicates {duplicates})"
            )
        fingerprints = Alert.objects.values_list("fingerprint", flat=True)
        distinct = len(set(fingerprints))
        print(
            f"  alerts stored: {len(fingerprints)} rows, {distinct} distinct fingerprints "
            f"(sent {args.alerts})"
        )
        print(f"  incidents: {Incident.objects.count()} (one per group key: {len(bodies)})")
        ok = len(fingerprints) == distinct == args.alerts and Incident.objects.count() == len(bodies)
        print(f"  every fingerprint stored exactly once, no duplicate incident: {'yes' if ok else 'NO'}")
        worst = min(rates.values())
        print(
            f"throughput {worst:.0f} alerts/s (slower pass) = {worst / TARGET:.2f} x the "
            f"{TARGET:.0f}/s target: {'met' if worst >= TARGET and ok else 'missed'}"
        )
        return 0 if ok else 1
    finally:
        web.terminate()
        web.wait(timeout=20)
        app.control.purge()


if __name__ == "__main__":
    raise SystemExit(main())
