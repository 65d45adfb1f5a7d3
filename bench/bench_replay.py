"""Benchmark: replay dev cases as a live cluster; what each system's replay writes, and whether it alerts.

Usage: .venv/bin/python bench/bench_replay.py [--data DIR] [--dataset NAME ...] [--limit N] [--alerts]

Per system (all in one run): cases, Prometheus series and samples per case, OpenMetrics and TSDB size,
seconds to write and to backfill (median, max). With --alerts, each replay is also loaded into a real
Prometheus and every rule is evaluated at the instants its first pending minute would be (15 s to 75 s
after the replayed present, every 15 s): a case "alerts" when some rule holds at all five, i.e. when
Prometheus started that soon after the replay would fire it. Its counts are against the recorded alert
rule's outcome (`robust_z`: it fired; `max_deviation` / `window_start`: it fell back; the index's own
alert for the rest).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from rca.telemetry.cases import CaseIndexError, CaseRef, load_case, read_index  # noqa: E402
from rca.telemetry.replay.replay import replay_case  # noqa: E402
from rca.telemetry.replay.servers import start_prometheus  # noqa: E402
from rca.telemetry.replay.timeline import EVALUATION_INTERVAL, RULE_FOR  # noqa: E402

FIRST_EVALUATION = 15.0  # seconds from the replayed present to Prometheus's first rule evaluation
PORT = 19390


def alerts(manifest: dict[str, Any], folder: Path) -> list[str]:
    """The rules that would fire, evaluated by a real Prometheus over the replay."""
    paths = manifest["paths"]
    server = start_prometheus(
        Path(paths["prometheus_config"]),
        Path(paths["tsdb"]),
        PORT,
        folder / "server",
        manifest["prometheus_flags"],
    )
    try:
        now = manifest["timeline"]["now"]
        points = int(RULE_FOR / EVALUATION_INTERVAL) + 1
        fired = []
        for rule in yaml.safe_load(Path(paths["rules"]).read_text())["groups"][0]["rules"]:
            start = now + FIRST_EVALUATION
            body = server.get(
                "/api/v1/query_range",
                query=rule["expr"],
                start=start,
                end=start + RULE_FOR,
                step=EVALUATION_INTERVAL,
            )
            if any(len(series["values"]) >= points for series in body["data"]["result"]):
                fired.append(rule["alert"])
        return fired
    finally:
        server.stop()


def recorded_rule(data: Path, ref: CaseRef) -> str:
    """How the recorded alert came about: its rule label, else its source."""
    labels = load_case(data, ref).alert.labels
    return labels.get("rule") or labels.get("source") or "?"


def _median_max(rows: list[dict[str, Any]], key: str, scale: float = 1.0) -> tuple[float, float]:
    values = [r[key] / scale for r in rows]
    return statistics.median(values), max(values)


def _outcome(rule: str) -> str:
    if rule == "robust_z":
        return "fired"
    return "fell back" if rule in ("max_deviation", "window_start") else "index"


def summary(system: str, rows: list[dict[str, Any]], with_alerts: bool) -> str:
    """One line of the table: medians (and maxima) per case of a system."""
    series, series_max = _median_max(rows, "series_total")
    om, om_max = _median_max(rows, "openmetrics_bytes", 1e6)
    write, write_max = _median_max(rows, "write_seconds")
    fill, fill_max = _median_max(rows, "backfill_seconds")
    line = (
        f"{system[:16]:16} {len(rows):5}  {series:7.0f} (max {series_max:.0f})"
        f"  {_median_max(rows, 'samples')[0]:9.0f}  {om:7.1f} (max {om_max:.1f})"
        f"  {_median_max(rows, 'tsdb_bytes', 1e6)[0]:6.2f}  {write:5.1f} (max {write_max:.1f})"
        f"  {fill:5.2f} (max {fill_max:.2f})"
    )
    if not with_alerts:
        return line
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        counts[_outcome(r["recorded_rule"])][0] += bool(r["fired"])
        counts[_outcome(r["recorded_rule"])][1] += 1
    tally = ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(counts.items()))
    return line + f"  {sum(bool(r['fired']) for r in rows)}/{len(rows)} ({tally})"


def main() -> int:
    """Run the benchmark and print its figures."""
    default = os.environ.get("ROOTLINE_DATA_DIR", str(REPO_ROOT.parent / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(default), help="data folder (with cases_index.csv)")
    parser.add_argument("--dataset", action="append", help="only these datasets (repeatable)")
    parser.add_argument("--limit", type=int, default=None, help="at most N cases per system")
    parser.add_argument("--alerts", action="store_true", help="also evaluate the rules in a real Prometheus")
    args = parser.parse_args()
    try:
        refs = read_index(args.data, split="dev", datasets=args.dataset)
    except CaseIndexError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    per_system: dict[str, list[CaseRef]] = defaultdict(list)
    for ref in refs:
        if args.limit is None or len(per_system[ref.system]) < args.limit:
            per_system[ref.system].append(ref)
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as scratch:
        for system, cases in per_system.items():
            for ref in cases:
                folder = Path(scratch) / "case"
                started = time.perf_counter()
                manifest = replay_case(args.data, ref, folder / "out", token="bench")
                row = {**manifest, "total_seconds": time.perf_counter() - started}
                if args.alerts:
                    row["fired"] = alerts(manifest, folder)
                    row["recorded_rule"] = recorded_rule(args.data, ref)
                rows[system].append(row)
                fired = (
                    f", fires {row['fired'] or '-'} (recorded: {row['recorded_rule']})" if args.alerts else ""
                )
                print(f"  {ref.case_id}: {manifest['series_total']} series{fired}", flush=True)
                shutil.rmtree(folder)
    print()
    header = "system           cases  series/case  samples/case  OpenMetrics MB  TSDB MB  write s  backfill s"
    print(header + ("  alerting (recorded fired / fell back / index)" if args.alerts else ""))
    for system, found in rows.items():
        print(summary(system, found, args.alerts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
