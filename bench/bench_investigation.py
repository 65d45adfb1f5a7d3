"""Seconds per investigation (offline policy) over the dev cases of each dataset: median and p95.

Run: .venv/bin/python bench/bench_investigation.py [--data ../shared/data] [--dataset NAME ...]
Target: median under 2 s on this machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rca.evaluation.runner import Selection, run

TARGET_MEDIAN_S = 2.0


def main() -> int:
    """Print the timing table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--dataset", action="append", default=[])
    args = parser.parse_args()
    if not (args.data / "cases_index.csv").is_file():
        print(f"bench_investigation: --data: no cases_index.csv in {args.data}", file=sys.stderr)
        return 2
    rows = run(Selection(args.data, "dev", tuple(args.dataset)))
    by_key: dict[str, list[float]] = {}
    for row in rows:
        by_key.setdefault(row.key, []).append(row.seconds)
    header = f"{'dataset':32s} {'cases':>5s} {'median s':>9s} {'p95 s':>7s} {'max s':>7s}"
    print(f"{header}  target median < {TARGET_MEDIAN_S}")
    for key, seconds in sorted(by_key.items()):
        ordered = sorted(seconds)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        median = statistics.median(ordered)
        verdict = "OK" if median < TARGET_MEDIAN_S else "SLOW"
        print(f"{key:32s} {len(ordered):5d} {median:9.3f} {p95:7.3f} {ordered[-1]:7.3f}  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
