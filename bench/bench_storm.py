"""Benchmark: an alert storm over loopback while workers investigate; nothing lost, nothing doubled.

Usage: .venv/bin/python bench/bench_storm.py [--alerts 20000] [--batch 50] [--senders 4] [--workers 2]

Brings up the whole stack of bench/stack.py (gunicorn; one Celery worker investigating with
`--workers` prefork processes; the memory worker; ArcadeDB; its own redis-server and PostgreSQL
database `bench_storm`), then POSTs `--alerts` Alertmanager alerts in batches of `--batch` (each batch
its own group, so its own incident and investigation) from `--senders` concurrent senders, as fast as
the server answers, while the workers investigate. Prints alerts accepted per second; checks that
every fingerprint is stored exactly once and that each group has exactly one incident and one
investigation; the investigation backlog drain time (from the last alert accepted to the last
investigation finished, and to the last one projected into the graph and indexed in memory); and the
peak resident memory (RSS, each process with its children, sampled every 0.2 s) of the web server, the
investigating worker, the memory worker and the graph server. The investigations use no recorded
telemetry and no live connector (none is configured), so they are short: what is measured is intake,
the broker and the investigation pipeline under a burst, not the engine's depth (bench_investigation.py).
"""

from __future__ import annotations

import argparse
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from stack import alert, integrity, investigations_summary, payload, running_stack, wait_drained


def main() -> int:
    """Run the storm and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alerts", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=50, help="alerts per webhook delivery (one group)")
    parser.add_argument("--senders", type=int, default=4, help="concurrent HTTP senders")
    parser.add_argument("--workers", type=int, default=2, help="investigating worker processes")
    parser.add_argument("--drain-timeout", type=float, default=1800.0, help="seconds to wait for the backlog")
    args = parser.parse_args()
    if min(args.alerts, args.batch, args.senders, args.workers) < 1:
        parser.error("--alerts, --batch, --senders and --workers must be >= 1")

    with running_stack("bench_storm", workers=args.workers) as stack:
        bodies = [
            payload(i, [alert(n) for n in range(start, min(start + args.batch, args.alerts))])
            for i, start in enumerate(range(0, args.alerts, args.batch))
        ]
        print(
            f"storm: {args.alerts} alerts in {len(bodies)} batches of {args.batch} (one group each), "
            f"{args.senders} concurrent senders; {stack.describe()}",
            flush=True,
        )
        peaks = dict.fromkeys(stack.processes, 0.0)
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                for role, mb in stack.rss_mb().items():
                    peaks[role] = max(peaks[role], mb)
                stop.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        first_sent = time.time()
        with ThreadPoolExecutor(args.senders) as pool:
            results = list(pool.map(stack.post, bodies))
        last_accepted = time.time()
        took = last_accepted - first_sent
        stored = sum(r["alerts_stored"] for r in results)
        print(f"  accepted {args.alerts / took:8.0f} alerts/s  ({took:.2f} s; stored {stored})", flush=True)
        last_finished, last_stored = wait_drained(len(bodies), args.drain_timeout)
        stop.set()
        sampler.join()
        print(
            f"  backlog drain: last investigation finished {last_finished - last_accepted:.1f} s after the "
            f"last alert was accepted ({last_finished - first_sent:.1f} s after the first was sent); "
            f"last graph projection / memory indexing {last_stored - last_accepted:.1f} s after"
        )
        ok, lines = integrity(args.alerts, len(bodies))
        for line in lines:
            print(f"  {line}")
        print("  investigations: " + "\n    ".join(investigations_summary()))
        peak = ", ".join(f"{role} {mb:.0f} MB" for role, mb in peaks.items())
        print(
            "  peak RSS (each with its children: web = gunicorn master + 1 worker, worker = main + "
            f"{args.workers} pool processes): {peak}"
        )
        print(f"zero lost, zero duplicated alerts and incidents: {'yes' if ok else 'NO'}")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
