"""Seconds per investigation of two checkouts of Rootline, interleaved case by case in one run.

Run: .venv/bin/python bench/bench_before_after.py BEFORE_DIR [AFTER_DIR] [--data ../shared/data]
     [--dataset NAME ...] [--rounds 1]
(e.g. `git worktree add /tmp/before <commit>` for BEFORE_DIR; AFTER_DIR defaults to this checkout.)

Each checkout runs in its own Python process (this virtualenv, its own source tree first on the path),
which loads each dev case and investigates it with the offline policy, exactly the timed part of
`rca.evaluation.runner.evaluate_case`. The two processes take the cases in turn (case 1 before, case 1
after, case 2 before, ...), so a machine whose load drifts during the run slows both alike: on a
shared machine the ratio is what this measures, not the seconds. Prints per dataset the median
seconds of each and after / before; a refactoring that changes no behaviour should stay within 10%.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

# Runs inside each checkout: reads "dataset<TAB>case id" lines, answers each with the seconds it took.
WORKER = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from rca.investigation.engine import EngineConfig, investigate
from rca.telemetry.cases import load_case, read_index
data = Path(sys.argv[2])
refs = {(r.dataset, r.case_id): r for r in read_index(data, split="dev")}
config = EngineConfig()
print("ready", flush=True)
for line in sys.stdin:
    dataset, case_id = line.rstrip("\\n").split("\\t")
    started = time.perf_counter()
    case = load_case(data, refs[(dataset, case_id)])
    investigate(case.source, case.alert, config)
    print(time.perf_counter() - started, flush=True)
"""


class Checkout:
    """One checkout's worker process."""

    def __init__(self, tree: Path, data: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(tree), str(data)],
            cwd=tree,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdin is not None
        if self.process.stdout.readline().strip() != "ready":
            raise SystemExit(f"bench_before_after: the worker in {tree} did not start")

    def time(self, dataset: str, case_id: str) -> float:
        """Seconds the checkout took to load and investigate the case."""
        assert self.process.stdout is not None
        assert self.process.stdin is not None
        self.process.stdin.write(f"{dataset}\t{case_id}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        """End the worker."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def main() -> int:
    """Print the before / after table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path, nargs="?", default=HERE)
    parser.add_argument("--data", type=Path, default=HERE.parent / "shared" / "data")
    parser.add_argument("--dataset", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=1, help="times each case is run by each checkout")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from rca.telemetry.cases import read_index

    refs = read_index(args.data, split="dev", datasets=args.dataset or None)
    before, after = Checkout(args.before.resolve(), args.data), Checkout(args.after.resolve(), args.data)
    seconds: dict[str, tuple[list[float], list[float]]] = {}
    try:
        for n in range(args.rounds):
            for ref in refs:
                pair = seconds.setdefault(f"{ref.dataset}/{ref.system}", ([], []))
                # Alternate who goes first, so neither always meets a warmer (or busier) machine.
                first, second = (before, after) if n % 2 == 0 else (after, before)
                a, b = first.time(ref.dataset, ref.case_id), second.time(ref.dataset, ref.case_id)
                pair[0].append(a if first is before else b)
                pair[1].append(b if first is before else a)
    finally:
        before.close()
        after.close()
    print(f"{'dataset':32s} {'cases':>5s} {'before s':>9s} {'after s':>9s} {'after/before':>13s}")
    for key, (old, new) in sorted(seconds.items()):
        old_median, new_median = statistics.median(old), statistics.median(new)
        ratio = new_median / old_median
        print(f"{key:32s} {len(old):5d} {old_median:9.3f} {new_median:9.3f} {ratio:13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
