"""The regression gate: a fixed subset of dev cases scored against a committed baseline.

A change may not lower AC@1 on the subset by more than `MAX_AC1_DROP` for any dataset, and no case
that was confident and correct may lose that status. `python -m rca.evaluation.regression --write`
records a new baseline (after a deliberate improvement), `--check` compares.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_AC1_DROP = 0.02
CASES_PER_SYSTEM = 3
BASELINE = Path(__file__).resolve().parent / "regression_baseline.json"


@dataclass(frozen=True)
class Verdict:
    """What the comparison found."""

    failures: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when nothing regressed."""
        return not self.failures


def subset(refs: Sequence[Any], per_system: int = CASES_PER_SYSTEM) -> list[Any]:
    """The first `per_system` dev cases of every (dataset, system), in index order: fixed and small."""
    seen: dict[tuple[str, str], int] = {}
    chosen = []
    for ref in refs:
        key = (ref.dataset, ref.system)
        if seen.get(key, 0) < per_system:
            seen[key] = seen.get(key, 0) + 1
            chosen.append(ref)
    return chosen


def snapshot(rows: Iterable[Any]) -> dict[str, Any]:
    """The baseline record of evaluated rows: AC@1 per dataset key and each case's status."""
    from rca.evaluation.scoring import ac_at

    materialised = list(rows)
    by_key: dict[str, list[Any]] = {}
    for row in materialised:
        by_key.setdefault(row.key, []).append(row)
    return {
        "ac1": {key: round(ac_at(group, 1), 4) for key, group in sorted(by_key.items())},
        "cases": {
            row.case_id: {"rank": row.rank, "confident_correct": row.exit == "confident" and row.rank == 1}
            for row in materialised
        },
    }


def compare(baseline: dict[str, Any], current: dict[str, Any]) -> Verdict:
    """Regressions of `current` against `baseline`."""
    failures = []
    for key, before in baseline["ac1"].items():
        after = current["ac1"].get(key)
        if after is None:
            failures.append(f"{key}: no longer evaluated")
        elif after < before - MAX_AC1_DROP:
            failures.append(f"{key}: AC@1 fell from {before:.3f} to {after:.3f}")
    for case_id, before in baseline["cases"].items():
        now = current["cases"].get(case_id)
        if before["confident_correct"] and not (now and now["confident_correct"]):
            failures.append(f"{case_id}: was confident and correct, is not any more")
    return Verdict(tuple(failures))


def evaluate_subset(data_dir: Path) -> dict[str, Any]:
    """Run the engine on the subset and snapshot it."""
    from rca.evaluation.runner import Selection, run

    selection = Selection(data_dir, "dev")
    chosen = {r.case_id for r in subset(selection.refs())}
    return snapshot(run(Selection(data_dir, "dev", case_ids=tuple(sorted(chosen)))))


def main(argv: list[str] | None = None) -> int:
    """Write or check the baseline."""
    parser = argparse.ArgumentParser(prog="python -m rca.evaluation.regression")
    parser.add_argument("--data", type=Path, required=True, help="folder with cases_index.csv")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="record a new baseline")
    mode.add_argument("--check", action="store_true", help="compare with the committed baseline")
    args = parser.parse_args(argv)
    current = evaluate_subset(args.data)
    if args.write:
        BASELINE.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
        print(f"baseline written: {BASELINE}")
        return 0
    verdict = compare(json.loads(BASELINE.read_text()), current)
    for line in verdict.failures:
        print(line, file=sys.stderr)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
