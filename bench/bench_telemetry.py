"""Benchmark: load the largest Nezha TrainTicket dev case and answer a one-service, ten-minute query.

Usage: .venv/bin/python bench/bench_telemetry.py [--data DIR] [--index FILE]

Prints load time, query time and rows returned (target: under 2 s in total). Runs in a fresh process
so no file cache is warm.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from rca.telemetry.cases import CaseIndexError, CaseRef, case_files, load_case, read_index  # noqa: E402
from rca.telemetry.model import TimeWindow  # noqa: E402
from rca.telemetry.recorded.nezha import _nezha_files  # noqa: E402

TARGET_SECONDS = 2.0


def case_bytes(data_dir: Path, ref: CaseRef) -> int:
    """Bytes of the case's own log/trace/traceid files (metric files are shared by the whole day)."""
    total = 0
    for rel in _nezha_files(ref):
        path = data_dir / rel
        if path.is_file():
            total += path.stat().st_size
    return total


def main() -> int:
    """Run the benchmark and print its figures."""
    default = os.environ.get("ROOTLINE_DATA_DIR", str(REPO_ROOT.parent / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(default), help="data folder (with cases_index.csv)")
    parser.add_argument("--index", type=Path, default=None, help="case index (default: DATA/cases_index.csv)")
    args = parser.parse_args()

    try:
        rows = read_index(args.data, split="dev", datasets=["nezha"], index=args.index)
    except CaseIndexError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    refs = [r for r in rows if r.system == "TrainTicket"]
    if not refs:
        print("no Nezha TrainTicket dev case in the index", file=sys.stderr)
        return 2
    ref = max(refs, key=lambda r: case_bytes(args.data, r))
    size = case_bytes(args.data, ref)

    t0 = time.perf_counter()
    case = load_case(args.data, ref)
    graph = case.source.topology()  # builds the span-derived graph: reads the case's trace files
    t1 = time.perf_counter()

    src = case.source
    # The busiest service by spans in the case window, queried over the ten minutes ending with it.
    window = TimeWindow(case.window.end - 600.0, case.window.end)
    service = max(
        graph.names(), key=lambda n: sum(e.weight for e in graph.edges if n in (e.caller, e.callee))
    )
    t2 = time.perf_counter()
    metrics = src.metrics(service, window)
    logs = src.logs(service, window)
    spans = src.spans(window, service)
    t3 = time.perf_counter()

    points = sum(len(s) for s in metrics)
    load_s, query_s = t1 - t0, t3 - t2
    print(
        f"case            {ref.case_id} ({size / 1e6:.1f} MB of log/trace files, "
        f"{len(case_files(ref))} file entries)"
    )
    print(f"service         {service}")
    print(f"window          {window.seconds:.0f} s")
    print(
        f"load            {load_s * 1000:.0f} ms (index row -> source + topology of {len(graph.edges)} edges)"
    )
    print(f"query           {query_s * 1000:.0f} ms")
    print(f"metrics         {len(metrics)} series, {points} points")
    print(f"logs            {len(logs)} records")
    print(f"spans           {len(spans)} spans")
    total = load_s + query_s
    verdict = "OK" if total < TARGET_SECONDS else "OVER TARGET"
    print(f"total           {total * 1000:.0f} ms (target < {TARGET_SECONDS * 1000:.0f} ms) {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
