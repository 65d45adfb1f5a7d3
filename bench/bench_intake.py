"""Benchmark: Alertmanager webhook intake throughput over loopback, deduplicated.

Usage: .venv/bin/python bench/bench_intake.py [--alerts N] [--batch N] [--senders N]

Starts gunicorn (the production server, gunicorn.conf.py as `dev.py run` has it) on a free
127.0.0.1 port against its own PostgreSQL database (`bench_intake`, created and migrated here) and
its own redis-server (bench/stack.py), issues an intake token, then POSTs Alertmanager v4 batches:
every alert once, then every batch again (Alertmanager re-sends firing alerts). Prints alerts accepted
per second for each pass and checks that every fingerprint is stored exactly once and that re-sends
opened no incident. Queued investigations are left unrun (no worker; bench_storm.py runs them) and go
with the broker at the end. Target: >= 500 alerts/s.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

from stack import alert, integrity, payload, running_stack

TARGET = 500.0


def main() -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alerts", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--senders", type=int, default=4, help="concurrent HTTP senders")
    args = parser.parse_args()
    with running_stack("bench_intake") as stack:
        alerts = [alert(n) for n in range(args.alerts)]
        bodies = [
            payload(i, alerts[start : start + args.batch])
            for i, start in enumerate(range(0, args.alerts, args.batch))
        ]
        print(
            f"{args.alerts} alerts in {len(bodies)} batches of {args.batch}, {args.senders} concurrent "
            f"senders; {stack.describe()}"
        )
        rates = {}
        for name in ("first delivery", "re-send (duplicates)"):
            started = time.perf_counter()
            with ThreadPoolExecutor(args.senders) as pool:
                results = list(pool.map(stack.post, bodies))
            took = time.perf_counter() - started
            rates[name] = args.alerts / took
            stored = sum(r["alerts_stored"] for r in results)
            duplicates = sum(r["duplicates"] for r in results)
            print(
                f"  {name:22s} {rates[name]:8.0f} alerts/s  "
                f"({took:.2f} s; stored {stored}, duplicates {duplicates})"
            )
        ok, lines = integrity(args.alerts, len(bodies))
        for line in lines:
            print(f"  {line}")
        print(f"  every fingerprint stored exactly once, no duplicate incident: {'yes' if ok else 'NO'}")
        worst = min(rates.values())
        print(
            f"throughput {worst:.0f} alerts/s (slower pass) = {worst / TARGET:.2f} x the "
            f"{TARGET:.0f}/s target: {'met' if worst >= TARGET and ok else 'missed'}"
        )
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
