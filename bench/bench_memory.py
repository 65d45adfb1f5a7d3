"""Benchmark: incident-memory embedding throughput and search latency over 10,000 stored incidents.

Usage: .venv/bin/python bench/bench_memory.py [--incidents 10000] [--queries 200] [--seed 7]

Prints embedding throughput (texts/s, one text per call and in batches) and search latency p50 / p95
(target: p95 under 50 ms) in Qdrant local mode, over synthetic incidents in a store of its own (a temp
folder, removed afterwards). "search" is the whole call (embed the query, then query Qdrant); the
vector-query part alone is printed too, with and without payload filters.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from qdrant_client import QdrantClient  # noqa: E402

from rca.memory.documents import IncidentDocument  # noqa: E402
from rca.memory.embedding import Embedder  # noqa: E402
from rca.memory.index import IncidentMemory, SearchFilters  # noqa: E402

TARGET_P95_MS = 50.0

SERVICES = [
    "checkout", "payment", "cart", "catalog", "frontend", "shipping", "email", "currency", "ads",
    "recommendation", "inventory", "auth", "user", "order", "search", "gateway", "notification",
    "billing", "pricing", "review", "media", "session", "ledger", "fraud", "profile", "config",
    "scheduler", "report", "export", "import",
]  # fmt: skip
FAULTS = {
    "cpu_saturation": "CPU usage at {v}% of limit on {s}",
    "memory_leak": "memory of {s} grew steadily to {v}% and the pod was OOM-killed",
    "network_delay": "p99 latency of calls to {s} rose to {v} ms",
    "pod_failure": "{s} pods restarted {v} times (CrashLoopBackOff)",
    "disk_full": "disk usage on {s} volume reached {v}%",
    "bad_deploy": "error rate of {s} jumped to {v}% right after deploy",
    "db_connection_exhaustion": "{s} connection pool exhausted, {v} waiting requests",
    "packet_loss": "{v}% packet loss between {s} and its callers",
}
SYMPTOMS = [
    "latency rose",
    "error rate spiked",
    "requests timed out",
    "throughput dropped",
    "5xx responses increased",
]
TIERS = ["notify", "issue", "patch", "pull_request"]


def synthetic(n: int, rng: random.Random) -> list[IncidentDocument]:
    """`n` varied incidents: a symptom service, a root-cause service, a fault, evidence lines, an onset."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    docs = []
    for i in range(n):
        symptom, cause, other = rng.sample(SERVICES, 3)
        kind = rng.choice(list(FAULTS))
        confident = rng.random() < 0.7
        evidence = [
            FAULTS[kind].format(s=cause, v=rng.randint(20, 99)),
            f"{symptom} {rng.choice(SYMPTOMS)} while calling {cause}",
            f"{other} healthy: error_rate 0.00",
        ]
        docs.append(
            IncidentDocument(
                incident_id=i + 1,
                title=f"{symptom} {rng.choice(SYMPTOMS)}",
                symptom_entity=symptom,
                services=(cause, other, symptom),
                root_cause_entity=cause if confident else "",
                fault_kind=kind if confident else "",
                tier=rng.choice(TIERS) if confident else "notify",
                exit="confident" if confident else "no_confident_root_cause",
                evidence=tuple(evidence),
                onset=start + timedelta(minutes=rng.randint(0, 525_600)),
            )
        )
    return docs


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of `values`, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def timed_ms(fn, runs: int) -> list[float]:  # type: ignore[no-untyped-def]
    """Per-call wall times in ms of `fn(i)` for i in range(runs)."""
    out = []
    for i in range(runs):
        t0 = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def line(label: str, ms: list[float]) -> str:
    return f"  {label:<44} p50 {statistics.median(ms):7.2f} ms   p95 {pct(ms, 0.95):7.2f} ms"


def main() -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--incidents", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    embedder = Embedder()
    t0 = time.perf_counter()
    embedder.load()
    print(f"model load: {time.perf_counter() - t0:.2f} s")

    docs = synthetic(args.incidents, rng)
    texts = [d.text() for d in docs]
    single_n = min(200, len(texts))
    embedder.embed(texts[:8])  # warm-up
    t0 = time.perf_counter()
    for text in texts[:single_n]:
        embedder.embed_one(text)
    single = single_n / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    vectors = embedder.embed(texts)
    batch = len(texts) / (time.perf_counter() - t0)
    print("embedding throughput (all-MiniLM-L6-v2 int8 ONNX, CPU):")
    print(f"  one text per call:  {single:8.1f} texts/s  ({1000 / single:.2f} ms each, {single_n} texts)")
    print(f"  batched (32):       {batch:8.1f} texts/s  ({1000 / batch:.2f} ms each, {len(texts)} texts)")

    with tempfile.TemporaryDirectory(prefix="rootline-bench-qdrant-") as tmp:
        client = QdrantClient(path=tmp)
        try:
            mem = IncidentMemory(client, embedder=embedder)
            t0 = time.perf_counter()
            mem.upsert_many(docs, vectors=vectors, batch_size=1000)
            print(f"stored {mem.count()} incidents in local mode in {time.perf_counter() - t0:.1f} s")

            queries = [
                f"slow {d.symptom_entity} caused by {d.services[0]} {kind.replace('_', ' ')}"
                for d, kind in zip(
                    rng.sample(docs, args.queries), rng.choices(list(FAULTS), k=args.queries), strict=True
                )
            ]
            qvecs = [v.tolist() for v in embedder.embed(queries)]
            since = datetime(2025, 3, 1, tzinfo=UTC)
            filtered = [
                SearchFilters(
                    service=rng.choice(SERVICES),
                    fault_kind=rng.choice(list(FAULTS)),
                    since=since,
                    until=since + timedelta(days=120),
                )
                for _ in queries
            ]
            mem.search_vector(qvecs[0], limit=10)  # warm-up
            plain_q = timed_ms(lambda i: mem.search_vector(qvecs[i], limit=10), len(queries))
            filt_q = timed_ms(lambda i: mem.search_vector(qvecs[i], filtered[i], limit=10), len(queries))
            full = timed_ms(lambda i: mem.search(queries[i], limit=10), len(queries))
            full_f = timed_ms(lambda i: mem.search(queries[i], filtered[i], limit=10), len(queries))
            recall = timed_ms(lambda i: mem.recall(queries[i], docs[i].symptom_entity), len(queries))
        finally:
            client.close()

    print(f"search over {len(docs)} incidents, local mode, {len(queries)} queries, limit 10:")
    print(line("vector query only, no filter", plain_q))
    print(line("vector query only, service+kind+time filter", filt_q))
    print(line("search(text) (embed + query), no filter", full))
    print(line("search(text, filters) (embed + query)", full_f))
    print(line("recall(text, symptom)", recall))
    worst = max(pct(full, 0.95), pct(full_f, 0.95))
    verdict = "meets" if worst < TARGET_P95_MS else "MISSES"
    print(f"search p95 {worst:.2f} ms {verdict} the {TARGET_P95_MS:.0f} ms target")
    return 0 if worst < TARGET_P95_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
