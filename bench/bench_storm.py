"""Benchmark: an alert storm over loopback while workers investigate; nothing lost, nothing doubled.

Usage: .venv/bin/python bench/bench_storm.py [--alerts 20000] [--batch 50] [--senders 4] [--workers 2]
       .venv/bin/python bench/bench_storm.py --rate 200 --seconds 60 --database sqlite [--per-post 1]
       .venv/bin/python bench/bench_storm.py --rate 1200 --seconds 60 --database postgres --per-post 10

With `--rate` (alerts per second) it is a sustained storm on `--database` (the embedded default, a
SQLite file with the embedded Redis, or PostgreSQL), on the supervised stack of tests/faults/stack.py
with an ArcadeDB graph server: deliveries of `--per-post` alerts are sent on a fixed schedule (open
loop: a slow answer does not slow the sender) for `--seconds`, a fifth of them re-sends of an earlier
delivery (a retrying Alertmanager), in groups of 50 alerts, while 2 workers investigate. It prints the
rate achieved, the 5xx count (any non-202), p50 / p95 / max latency, the alerts lost and
duplicated, and the CPU time the web server (and this sender) spent per delivery, a figure that,
unlike the rate and the latency, changes little with what else the machine runs. The rate achieved
counts until the last answer, so a server that keeps pace achieves a little less than the rate
offered (60,000 alerts over 60 s plus a last answer's 0.4 s is 993/s): to show a capacity of 1,000/s,
offer more (1,200/s). Without `--rate`, as follows.

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
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from stack import (
    alert,
    integrity,
    investigations_summary,
    payload,
    running_stack,
    tree_cpu_s,
    wait_drained,
    web_workers,
)

GROUP = 50  # alerts per group (one incident, one investigation each) in the sustained storm
DUPLICATE_EVERY = 5  # every fifth delivery re-sends an earlier one


def sustained(rate: float, seconds: float, database: str, per_post: int, senders: int) -> int:
    """The `--rate` mode (see the module docstring); 0 when nothing was refused, lost or doubled."""
    from tests.faults.stack import own_graph, running

    # The PostgreSQL database is `bench_storm_faults` beside the suite's (dropped afterwards).
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/bench_storm"
    posts = int(rate * seconds / per_post)
    plan = [n if n % DUPLICATE_EVERY else max(0, n - DUPLICATE_EVERY * 7) for n in range(posts)]
    distinct_posts = sorted(set(plan))

    def body(n: int) -> bytes:
        alerts = [alert(n * per_post + k) for k in range(per_post)]
        return payload((n * per_post) // GROUP, alerts)

    with own_graph() as (_, graph_env), running(database, workers=2, graph=graph_env) as stack:
        print(
            f"sustained storm on {database}: {rate:.0f} alerts/s for {seconds:.0f} s = {posts} "
            f"deliveries of {per_post} alert(s), 1 in {DUPLICATE_EVERY} a re-send; "
            f"{senders} senders; gunicorn with {web_workers(stack.child('web').proc.pid)} worker processes; "
            f"2 workers investigating; machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        bodies = [body(n) for n in plan]
        web = stack.child("web").proc.pid
        web_cpu, own_cpu, start = tree_cpu_s(web), time.process_time(), time.monotonic()
        results = stack.send_on_schedule(bodies, rate / per_post, senders)
        took = time.monotonic() - start
        web_cpu, own_cpu = tree_cpu_s(web) - web_cpu, time.process_time() - own_cpu
        latencies = sorted(t for _, t in results)
        refused = sum(1 for status, _ in results if status != 202)
        fivexx = sum(1 for status, _ in results if status >= 500)
        expected = {f"{n * per_post + k:016x}" for n in distinct_posts for k in range(per_post)}
        stored = dict(stack.rows("SELECT fingerprint, COUNT(*) FROM incidents_alert GROUP BY fingerprint"))
        lost = len(expected - set(stored))
        doubled = sum(count - 1 for count in stored.values())
        print(
            f"  sent {posts} deliveries ({posts * per_post} alerts, {len(expected)} distinct) "
            f"in {took:.1f} s: "
            f"{posts * per_post / took:.0f} alerts/s achieved"
        )
        print(f"  5xx: {fivexx}; any non-202: {refused}")
        print(
            f"  latency: p50 {statistics.median(latencies) * 1000:.0f} ms, "
            f"p95 {latencies[int(0.95 * (len(latencies) - 1))] * 1000:.0f} ms, "
            f"max {latencies[-1] * 1000:.0f} ms"
        )
        print(f"  alerts lost: {lost}; duplicated: {doubled}")
        # CPU per delivery depends little on what else the machine runs, unlike the rate and latency.
        print(
            f"  CPU per delivery: web server {web_cpu / posts * 1000:.2f} ms, this sender "
            f"{own_cpu / posts * 1000:.2f} ms; load average at the end {os.getloadavg()[0]:.1f}"
        )
        return 0 if refused == lost == doubled == 0 else 1


def main() -> int:
    """Run the storm and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, help="alerts per second, sustained (see the docstring)")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--per-post", type=int, default=1, help="alerts per delivery in the sustained storm")
    parser.add_argument("--alerts", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=50, help="alerts per webhook delivery (one group)")
    parser.add_argument("--senders", type=int, default=4, help="concurrent HTTP senders")
    parser.add_argument("--workers", type=int, default=2, help="investigating worker processes")
    parser.add_argument("--drain-timeout", type=float, default=1800.0, help="seconds to wait for the backlog")
    args = parser.parse_args()
    if args.rate is not None:
        # Enough senders that the schedule holds while answers take up to a quarter second.
        senders = max(args.senders, int(args.rate / args.per_post / 4) + 1)
        return sustained(args.rate, args.seconds, args.database, args.per_post, senders)
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
            "  peak RSS (each with its children: web = gunicorn master + its workers, worker = main + "
            f"{args.workers} pool processes): {peak}"
        )
        print(f"zero lost, zero duplicated alerts and incidents: {'yes' if ok else 'NO'}")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
