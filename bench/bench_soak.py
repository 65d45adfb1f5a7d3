"""Benchmark: a steady alert rate for a long time, watching the memory of every process for a leak.

Usage: .venv/bin/python bench/bench_soak.py [--rate 20] [--duration 1800] [--sample-every 10]
       [--warmup 300] [--group-every 10] [--workers 2] [--threshold 1.0] [--prime 4000]

Brings up the whole stack of bench/stack.py (gunicorn; one Celery worker investigating with
`--workers` prefork processes; the memory worker; ArcadeDB; its own redis-server and PostgreSQL
database `bench_soak`), primes it (below), then for `--duration` seconds POSTs, once a second, an
Alertmanager batch of `--rate` new alerts; a new group (so a new incident, investigated, projected
into the graph and indexed in memory) starts every `--group-every` seconds. Every `--sample-every`
seconds it prints the resident memory (RSS, each process with its children) of the web server, the
investigating worker, the memory worker and the graph server. At the end it checks that nothing was
lost or duplicated and fits a least-squares line to each process's RSS over time, leaving out the
first `--warmup` seconds (imports, caches, the JIT filling up): a slope above `--threshold` MB per
10 minutes is reported as a growth trend. It also prints each process's threads and open file
descriptors after the warm-up and at the end: a leak of connections or threads. The worker's
investigations use no recorded telemetry and no live connector (none is configured), so they are
short; the bench exercises intake, the broker, the investigation pipeline and its graph and memory
steps at a steady pace, not the engine's depth.

Priming: the web process's memory rises by about 12 MB over its first ~3,500 intake requests and is
flat after that, with glibc's allocator and with jemalloc alike (measured: 299 -> 311 MB by request
3,500, then 312.1 MB from request 12,000 to 22,500). At one request a second a 30-minute soak would
sit entirely inside that rise and report it as a trend, so before the clock starts the bench sends
`--prime` deliveries of `--rate` alerts as fast as it can, into a handful of groups (new alerts of
few incidents: intake work without an investigation backlog). They count in the lost/duplicated check.
The graph server's JVM starts with its whole heap committed and touched (bench/stack.py), so its RSS
shows growth outside the heap, not the heap expanding toward its cap (191 -> 205 MB in a 30-minute
soak before that, on the way to the 290 MB where an earlier run levelled off).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from stack import alert, integrity, investigations_summary, payload, running_stack, wait_drained

DATABASE = "bench_soak"
PRIME_GROUPS = 10


def main() -> int:
    """Run the soak and print its samples, slopes and verdict."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=20, help="alerts per second")
    parser.add_argument("--duration", type=int, default=1800, help="seconds of sending")
    parser.add_argument("--sample-every", type=float, default=10.0, help="seconds between RSS samples")
    parser.add_argument("--warmup", type=float, default=300.0, help="seconds left out of the fit")
    parser.add_argument("--group-every", type=int, default=10, help="seconds per alert group (incident)")
    parser.add_argument("--workers", type=int, default=2, help="investigating worker processes")
    parser.add_argument("--threshold", type=float, default=1.0, help="MB per 10 minutes called growth")
    parser.add_argument("--prime", type=int, default=4000, help="deliveries sent before the clock starts")
    args = parser.parse_args()
    if min(args.rate, args.duration, args.group_every, args.workers) < 1 or args.warmup >= args.duration:
        parser.error("--rate, --duration, --group-every and --workers must be >= 1; --warmup < --duration")
    if args.prime < 0:
        parser.error("--prime must be >= 0")
    prime_groups = min(args.prime, PRIME_GROUPS)

    with running_stack(DATABASE, workers=args.workers) as stack:
        from rca.incidents.models import Investigation

        print(
            f"soak: {args.rate} alerts/s for {args.duration} s, a new group every {args.group_every} s; "
            f"{stack.describe()}",
            flush=True,
        )
        roles = list(stack.processes)
        if args.prime:
            before = stack.rss_mb()["web"]
            started = time.monotonic()
            bodies = (
                payload(n % prime_groups, [alert(a) for a in range(n * args.rate, (n + 1) * args.rate)])
                for n in range(args.prime)
            )
            with ThreadPoolExecutor(4) as pool:
                primed = sum(answer["alerts_stored"] for answer in pool.map(stack.post, bodies))
            print(
                f"primed: {args.prime} deliveries ({primed} alerts, {prime_groups} groups) in "
                f"{time.monotonic() - started:.0f} s; web {before:.1f} -> {stack.rss_mb()['web']:.1f} MB",
                flush=True,
            )
        print("   t(s)  " + "  ".join(f"{role:>13s}" for role in roles) + "   accepted  investigated")
        samples: list[tuple[float, dict[str, float]]] = []
        accepted = 0
        stop = threading.Event()
        t0 = time.monotonic()
        # Taken with the first sample after the warm-up, when every pool has opened its connections.
        handles_before: dict[str, tuple[int, int]] = {}

        def sample() -> None:
            while not stop.is_set():
                now = time.monotonic() - t0
                rss = stack.rss_mb()
                samples.append((now, rss))
                if not handles_before and now >= args.warmup:
                    handles_before.update(stack.handles())
                done = Investigation.objects.exclude(finished_at=None).count()
                cells = "  ".join(f"{rss[r]:10.1f} MB" for r in roles)
                print(f"{now:7.0f}  {cells}  {accepted:9d}  {done:12d}", flush=True)
                stop.wait(args.sample_every)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        lag = 0.0
        futures: list[Future[dict[str, Any]]] = []
        with ThreadPoolExecutor(4) as pool:
            for second in range(args.duration):
                # On a schedule, not back to back: a slow answer must not lower the offered rate.
                delay = t0 + second - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                lag = max(lag, -delay)
                first = (args.prime + second) * args.rate
                body = payload(
                    prime_groups + second // args.group_every,
                    [alert(n) for n in range(first, first + args.rate)],
                )
                futures.append(pool.submit(stack.post, body))
                accepted = sum(f.result()["alerts_stored"] for f in futures if f.done())
        accepted = sum(f.result()["alerts_stored"] for f in futures)
        sent_for = time.monotonic() - t0
        steady_sent = args.duration * args.rate
        sent = args.prime * args.rate + steady_sent
        groups = prime_groups + -(-args.duration // args.group_every)
        wait_drained(groups, timeout=900)
        stop.set()
        sampler.join()

        print(
            f"sent {steady_sent} alerts in {sent_for:.0f} s ({steady_sent / sent_for:.1f}/s offered, "
            f"scheduler lag at most {lag:.2f} s); accepted {accepted}"
        )
        handles_after = stack.handles()
        ok, lines = integrity(sent, groups)
        for line in [*lines, *investigations_summary()]:
            print(f"  {line}")
        steady = [(t, rss) for t, rss in samples if t >= args.warmup]
        if len(steady) < 3:
            print("too few samples after the warm-up for a trend")
            return 1
        print(
            f"RSS trend after the first {args.warmup:.0f} s ({len(steady)} samples, least-squares slope; "
            f"growth trend when above {args.threshold} MB per 10 min):"
        )
        growing = []
        for role in roles:
            xs = [t for t, _ in steady]
            ys = [rss[role] for _, rss in steady]
            slope = statistics.linear_regression(xs, ys).slope * 600
            verdict = "GROWTH TREND" if slope > args.threshold else "no growth trend"
            if slope > args.threshold:
                growing.append(role)
            print(
                f"  {role:14s} {slope:+7.2f} MB/10 min  (from {ys[0]:.1f} to {ys[-1]:.1f} MB; "
                f"min {min(ys):.1f}, max {max(ys):.1f})  {verdict}"
            )
        # A leak of connections or threads grows these without showing in RSS for a long time.
        print(f"threads / open file descriptors (sockets included), at {args.warmup:.0f} s -> at the end:")
        for role in roles:
            (t_a, f_a), (t_b, f_b) = handles_before[role], handles_after[role]
            print(f"  {role:14s} {t_a:4d} / {f_a:4d} -> {t_b:4d} / {f_b:4d}")
        trend = ", ".join(growing) or "none"
        print(f"nothing lost or duplicated: {'yes' if ok else 'NO'}; growth trend: {trend}")
        return 0 if ok and not growing else 1


if __name__ == "__main__":
    raise SystemExit(main())
