"""Benchmark: project an investigation with 200 evidence items into a real ArcadeDB over Bolt.

Usage: .venv/bin/python bench/bench_graph.py [--evidence N] [--runs N]

Starts its own ArcadeDB server (graphstore.launcher.ArcadeServer) on free ports in a temporary
folder, warms the JVM up, then prints the projection time of a new incident (median and p95 over
`--runs` incidents) and of a re-projection of an already projected one, with the number of
statements (round trips inside the transaction) each took. Target: under 100 ms for 200 evidence
items, in a bounded number of round trips. Stops the server on exit.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from neo4j import GraphDatabase  # noqa: E402

from graphstore.document import (  # noqa: E402
    CallEdge,
    ChangeCitation,
    EvidenceItem,
    GraphDocument,
    HypothesisNode,
    IncidentNode,
    InvestigationSummary,
    PropagationHop,
    RootCause,
    ServiceNode,
    ServiceRef,
)
from graphstore.launcher import ArcadeServer  # noqa: E402
from graphstore.projection import STATEMENTS, project  # noqa: E402
from graphstore.schema import ensure_schema  # noqa: E402

TARGET_MS = 100.0
DATABASE = "bench"
WARMUP = 20


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def investigation(incident_id: int, evidence: int, hypotheses: int = 8) -> GraphDocument:
    """A confident investigation over a 20-service chain with `evidence` items spread over its hypotheses."""
    ns = "shop"
    services = [ServiceRef(f"svc-{i:02d}", ns) for i in range(20)]
    onset = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    hyps = tuple(
        HypothesisNode(f"h{i}", services[i], "latency", "validated" if i == 0 else "inconclusive", 0.5, i)
        for i in range(hypotheses)
    )
    items = tuple(
        EvidenceItem(
            hypothesis=f"h{i % hypotheses}",
            seq=i // hypotheses,
            tool="metrics.query",
            source="metrics",
            verdict="supports" if i % 3 == 0 else "inconclusive",
            summary=f"p99 latency of {services[i % hypotheses].name} at {400 + i} ms vs 120 ms baseline",
            target=services[i % hypotheses].name,
            observed_at=onset + timedelta(seconds=i),
        )
        for i in range(evidence)
    )
    hops = tuple(
        PropagationHop(k, services[k], services[k + 1], True, (f"hop {k} cause", f"hop {k} effect"))
        for k in range(4)
    )
    return GraphDocument(
        incident=IncidentNode(
            incident_id, "checkout 5xx", "open", "critical", "recorded", onset, services[4]
        ),
        investigation=InvestigationSummary(
            id=incident_id,
            policy="offline",
            exit="confident",
            stop_reason="validated",
            tier="patch",
            grounding="grounded",
            outcome="root_cause",
            raw_confidence=0.9,
            capped_confidence=0.84,
            finished_at=onset + timedelta(minutes=3),
            candidates=tuple(s.name for s in services[:5]),
        ),
        services=tuple(ServiceNode(s, "service") for s in services),
        calls=tuple(CallEdge(services[i + 1], services[i], float(10 + i)) for i in range(19)),
        hypotheses=hyps,
        evidence=items,
        root_cause=RootCause(services[0], "latency", "h0", 0.84),
        hops=hops,
        change=ChangeCitation("commit", "9fceb02", services[0], onset - timedelta(minutes=5), "bump pool"),
    )


def cpu_seconds(pid: int | None) -> float | None:
    """CPU time (user + system) the process has used so far, from /proc (Linux); None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError, TypeError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def main() -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evidence", type=int, default=200, help="evidence items per investigation")
    parser.add_argument("--runs", type=int, default=30, help="measured projections of each kind")
    args = parser.parse_args()
    if args.evidence < 0 or args.runs < 1:
        print("error: --evidence must be >= 0 and --runs >= 1", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="rootline-bench-graph-") as tmp:
        server = ArcadeServer(
            root=Path(tmp),
            bolt_port=free_port(),
            http_port=free_port(),
            password=secrets.token_urlsafe(16),
            database=DATABASE,
            heap="512m",
        )
        t0 = time.perf_counter()
        server.start()
        print(f"ArcadeDB up on {server.uri} in {time.perf_counter() - t0:.1f} s")
        try:
            with GraphDatabase.driver(server.uri, auth=("root", server.password)) as driver:
                ensure_schema(driver, DATABASE)
                next_id = iter(range(1, 1_000_000))
                for _ in range(WARMUP):  # JIT warm-up: the first projections run interpreted code
                    project(investigation(next(next_id), args.evidence), driver, DATABASE)
                fresh, again = [], []
                statements = set()
                # CPU time, unlike wall clock, does not grow when other processes share the CPUs.
                server_cpu, client_cpu = cpu_seconds(server.pid()), time.process_time()
                for _ in range(args.runs):
                    doc = investigation(next(next_id), args.evidence)
                    first = project(doc, driver, DATABASE)
                    second = project(doc, driver, DATABASE)
                    fresh.append(first.elapsed_s * 1000)
                    again.append(second.elapsed_s * 1000)
                    statements |= {first.statements, second.statements}
                    created = (first.nodes_created, first.relationships_created)
                server_after, client_after = cpu_seconds(server.pid()), time.process_time()
        finally:
            server.stop()

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (wall-clock figures include contention)")
    print(
        f"investigation: {args.evidence} evidence items; "
        f"created {created[0]} nodes, {created[1]} relationships"
    )
    print(
        f"statements per projection: {sorted(statements)} (constant: {len(STATEMENTS)}); "
        f"round trips: {len(STATEMENTS)} statements + BEGIN + COMMIT = {len(STATEMENTS) + 2}"
    )
    for label, values in (("new incident", fresh), ("re-projection", again)):
        print(
            f"{label:14s}: median {statistics.median(values):6.1f} ms, "
            f"p95 {percentile(values, 0.95):6.1f} ms, min {min(values):6.1f} ms over {len(values)} runs"
        )
    projections = 2 * args.runs
    if server_cpu is not None and server_after is not None:
        print(
            f"CPU per projection: server {(server_after - server_cpu) * 1000 / projections:.1f} ms, "
            f"client {(client_after - client_cpu) * 1000 / projections:.1f} ms (both kinds, averaged)"
        )
    verdict = "met" if statistics.median(fresh) < TARGET_MS else "MISSED"
    print(f"target < {TARGET_MS:.0f} ms (median, new incident): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
