"""Benchmark: incident pages' server time with 10,000 incidents in PostgreSQL and in the graph database.

Usage: .venv/bin/python bench/bench_pages.py [--incidents N] [--requests N]

Creates and migrates its own database (`bench_pages`), starts its own ArcadeDB server over Bolt (in a
temporary folder, on free ports), investigates one real dev case (RCD Sock Shop carts-cpu/1) with the
engine and stores it as a template, then bulk-inserts N incidents, each with an alert and a finished
investigation built from that result (every fifth with the full hypothesis and evidence rows and a
proposed action, like the real one), and projects every one into the graph with the production
projection (`graphstore.sync.rebuild`). It then times pages through Django's full request path
(middleware, views, templates; Client in-process, so no socket time) for a logged-in user and prints
p50 / p95: the incident detail, and the explorer, which reads the incident's hypotheses, evidence,
root cause and path from the graph and finds the incidents with the same root cause or failing edge by
traversal (every seeded incident has the template's root cause and path: the traversal's worst case).
Target: p95 under 150 ms for both. Incident memory is a local store in a temporary folder (the
similar-incidents panel embeds the incident's text and searches it, as in production).
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

print = functools.partial(print, flush=True)  # progress shows while it runs, also into a file
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATABASE = "bench_pages"
TARGET_MS = 150.0
CASE = ("rcd-sockshop", "rcd/carts-cpu/1")


def start_graph() -> Any:
    """An ArcadeDB server over Bolt of its own, in a temporary folder (the caller stops it)."""
    from graphstore.launcher import ArcadeServer

    server = ArcadeServer(
        root=Path(tempfile.mkdtemp(prefix="bench-pages-arcadedb-")),
        bolt_port=free_port(),
        http_port=free_port(),
        password=secrets.token_urlsafe(16),
        database=DATABASE,
        heap="768m",
    )
    server.start()
    return server


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def setup_django(graph: Any) -> None:
    """Point Django at the bench database, the bench graph server and a throwaway memory store,
    migrate, and start it."""
    env = {
        "NEO4J_URI": graph.uri,
        "NEO4J_USER": "root",
        "NEO4J_PASSWORD": graph.password,
        "NEO4J_DATABASE": DATABASE,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DATABASE}",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-only-secret-key-" + "x" * 32),
        "ROOTLINE_VAR_DIR": str(REPO / "var" / "bench"),
        "QDRANT_PATH": tempfile.mkdtemp(prefix="bench-pages-qdrant-"),
        "DJANGO_SETTINGS_MODULE": "rca.settings",
    }
    os.environ.update(env)
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", DATABASE], check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DATABASE], check=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, check=True)
    import django

    django.setup()


def template() -> Any:
    """A real investigation result to copy: the engine on one recorded dev case."""
    from rca.investigation.engine import investigate
    from rca.telemetry.cases import find_case, load_case

    data = REPO.parent / "shared" / "data"
    case = load_case(data, find_case(data, *CASE))
    return investigate(case.source, case.alert)


def seed(n: int, result: Any) -> list[int]:
    """Bulk-insert `n` incidents like the template; returns the ids that carry the full rows."""
    from rca.incidents.models import ActionProposal, Alert, Evidence, Hypothesis, Incident, Investigation
    from rca.investigation.document import document_of

    doc = document_of(result).to_json()
    outcome = doc["outcome"]
    start = datetime(2025, 1, 1, tzinfo=UTC)
    incidents = Incident.objects.bulk_create(
        [
            Incident(
                title=f"front-end latency above SLO #{i}",
                status=random.choice(["open", "resolved", "investigating"]),
                severity="critical",
                onset=start + timedelta(minutes=i),
                symptom_entity=f"svc-{i % 60}",
                fingerprint=f"{i:016x}",
                group_key=f"group-{i}",
                source="alertmanager",
                labels={"alertname": "HighLatency", "job": f"shop/svc-{i % 60}"},
            )
            for i in range(n)
        ],
        batch_size=2000,
    )
    Alert.objects.bulk_create(
        [
            Alert(
                incident=inc,
                source="alertmanager",
                fingerprint=inc.fingerprint,
                labels=inc.labels,
                annotations={"summary": inc.title},
                entity={"service.name": inc.symptom_entity},
                starts_at=inc.onset,
                raw={"labels": inc.labels},
            )
            for inc in incidents
        ],
        batch_size=2000,
    )
    investigations = Investigation.objects.bulk_create(
        [
            Investigation(
                incident=inc,
                attempt_key=f"{inc.pk}:1",
                status="succeeded",
                started_at=inc.onset,
                finished_at=inc.onset + timedelta(seconds=2),
                dispatched_at=inc.onset,
                gate=doc["gate"],
                exit=result.exit,
                raw_confidence=outcome["raw_confidence"],
                capped_confidence=outcome["capped_confidence"],
                grounding=outcome["grounding"],
                tier=outcome["tier"],
                outcome=outcome["kind"],
                root_cause_entity=result.root_cause.entity if result.root_cause else "",
                root_cause_kind=result.root_cause.fault_kind if result.root_cause else "",
                candidates=doc["candidates"],
                propagation_path=doc["path"],
                evidence_chain=doc["chain"],
                beliefs=doc["beliefs"],
                progress={"turn": result.turns, "steps": doc["steps"], "stop_reason": result.stop_reason},
                turns=result.turns,
                guidance=doc["guidance"] or {},
                result_document=doc,
            )
            for inc in incidents
        ],
        batch_size=1000,
    )
    full = investigations[::5]
    hypotheses = Hypothesis.objects.bulk_create(
        [
            Hypothesis(
                investigation=inv,
                key=h.id,
                entity=h.entity,
                fault_kind=h.fault_kind,
                parent_key=h.parent_id or "",
                state=h.state.value,
                prior=h.prior,
                rank=rank,
            )
            for inv in full
            for rank, h in enumerate(result.hypotheses)
        ],
        batch_size=2000,
    )
    per = len(result.hypotheses)
    Evidence.objects.bulk_create(
        [
            Evidence(
                hypothesis=row,
                seq=seq,
                tool=item.tool,
                target=h.entity,
                source=item.source.value,
                verdict=item.verdict.value,
                summary=item.summary,
                observed_at=datetime.fromtimestamp(item.observed_at, tz=UTC),
                signals=dict(item.signals),
            )
            for i, row in enumerate(hypotheses)
            for h in [result.hypotheses[i % per]]
            for seq, item in enumerate(h.evidence)
        ],
        batch_size=5000,
    )
    ActionProposal.objects.bulk_create(
        [
            ActionProposal(
                investigation=inv, tier=outcome["tier"], max_allowed_tier=outcome["tier"], title="t", body="b"
            )
            for inv in full
        ],
        batch_size=2000,
    )
    return [inv.incident_id for inv in full]


def timed(client: Any, path: str, runs: int) -> list[float]:
    """Server times (ms) of `runs` GETs of `path`."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    return times


def report(name: str, times: list[float]) -> float:
    """Print p50 / p95 and return p95."""
    p95 = statistics.quantiles(times, n=20)[-1]
    print(f"  {name:40s} p50 {statistics.median(times):7.1f} ms   p95 {p95:7.1f} ms")
    return p95


def project_all() -> None:
    """Every incident's latest finished investigation into the graph, as `manage.py sync_graph` does."""
    from graphstore.sync import rebuild

    started = time.perf_counter()
    done = rebuild()
    print(
        f"projected {done.incidents} incidents into the graph ({done.hypotheses} hypotheses, "
        f"{done.evidence} evidence items, {done.hops} hops) in {time.perf_counter() - started:.1f} s"
    )


def from_graph(client: Any, pk: int) -> None:
    """Check that the explorer of `pk` really read the graph (no fallback) and found related incidents."""
    response = client.get(f"/incidents/{pk}/explorer/")
    assert response.status_code == 200, response.status_code
    body = response.content.decode()
    assert 'data-source="graph"' in body, f"incident {pk}: drawn from the stored result"
    assert 'id="graph-banner"' not in body, f"incident {pk}: fallback banner"
    related = body[body.index('id="related"') :]
    assert "<table" in related[: related.index("</section>")], f"incident {pk}: no related incidents"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--incidents", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    graph = start_graph()
    try:
        setup_django(graph)
        return run(args.incidents, args.requests)
    finally:
        graph.stop()


def run(incidents: int, requests: int) -> int:
    """Seed, project, time; returns the exit status."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    random.seed(7)
    result = template()
    started = time.perf_counter()
    full = seed(incidents, result)
    print(
        f"seeded {incidents} incidents ({len(full)} with {len(result.hypotheses)} hypotheses and their "
        f"evidence each) in {time.perf_counter() - started:.1f} s"
    )
    project_all()
    user = get_user_model().objects.create_superuser("bench", "bench@example.org", "bench-password-1")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    sample = random.sample(full, min(requests, len(full)))
    client.get(f"/incidents/{sample[0]}/")  # warm up: templates, the embedding model, the store
    for pk in sample[:20]:  # and the graph server's JIT, on other incidents than those timed
        from_graph(client, pk)
    sample = sample[20:] or sample
    detail = [t for pk in sample for t in timed(client, f"/incidents/{pk}/", 1)]
    explorer = [t for pk in sample for t in timed(client, f"/incidents/{pk}/explorer/", 1)]
    from_graph(client, sample[-1])
    print(f"server time over {len(sample)} incidents (of {incidents} in the database and the graph):")
    p95 = {
        "incident detail": report("incident detail", detail),
        "explorer (reads the graph)": report("explorer (reads the graph)", explorer),
    }
    report("incident list (page 1)", timed(client, "/incidents/", 30))
    report(
        "incident list, status + service filter", timed(client, "/incidents/?status=open&service=svc-7", 30)
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (wall-clock figures include contention)")
    for name, value in p95.items():
        verdict = "met" if value < TARGET_MS else "missed"
        print(
            f"{name} p95 {value:.1f} ms = {value / TARGET_MS:.2f} x the {TARGET_MS:.0f} ms target: {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
