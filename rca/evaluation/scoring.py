"""Scores of the RCA literature, computed from per-case rows.

AC@k is the share of cases whose true root-cause service is among the top k candidates; Avg@5 is
the mean of AC@1..AC@5. Fault kinds are compared after mapping each dataset's labels onto the
engine's kinds (the mapping is dataset knowledge and lives here, on the evaluation side).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# dataset fault labels -> the engine's fault kinds
_KIND_OF_LABEL = {
    "latency_injection": "latency",
    "network_delay": "latency",
    "error_injection": "errors",
    "exception": "errors",
    "return": "errors",
    "cpu_hog": "cpu",
    "cpu_contention": "cpu",
    "cpu_consumed": "cpu",
    "memory_leak": "memory",
}
# Datasets whose every case is a defective change: the kind is a bad deploy whatever the defect.
_CHANGE_DATASETS = frozenset({"changerca-ob"})


def expected_kind(dataset: str, label: str) -> str | None:
    """The engine fault kind a dataset's label corresponds to (None when unlabelled or unknown)."""
    if dataset in _CHANGE_DATASETS:
        return "bad_deploy"
    return _KIND_OF_LABEL.get(label)


@dataclass(frozen=True)
class CaseRow:
    """One evaluated case."""

    dataset: str
    system: str
    case_id: str
    truth: str
    truth_kind: str | None
    top5: tuple[str, ...]
    predicted_kind: str | None  # the kind named for the top candidate
    exit: str
    tier: str
    capped_confidence: float
    seconds: float
    hops: int = 0  # propagation-path hops of the conclusion
    verified_hops: int = 0  # of those, the ones passing every forward-verification rule

    @property
    def key(self) -> str:
        """The scorecard key: dataset and system as the index names them."""
        return f"{self.dataset}/{self.system}"

    @property
    def rank(self) -> int | None:
        """1-based rank of the truth among the top five, None when absent."""
        return self.top5.index(self.truth) + 1 if self.truth in self.top5 else None

    def as_csv(self) -> dict[str, Any]:
        """The row as `cases.csv` writes it."""
        return {
            "dataset": self.key,
            "case_id": self.case_id,
            "truth": self.truth,
            "top5": "|".join(self.top5),
            "rank": self.rank or "",
            "exit": self.exit,
            "tier": self.tier,
            "capped_confidence": f"{self.capped_confidence:.4f}",
            "seconds": f"{self.seconds:.3f}",
            "predicted_kind": self.predicted_kind or "",
            "truth_kind": self.truth_kind or "",
            "hops": self.hops,
            "verified_hops": self.verified_hops,
        }


def ac_at(rows: Sequence[CaseRow], k: int) -> float:
    """AC@k."""
    return sum(1 for r in rows if r.rank is not None and r.rank <= k) / len(rows) if rows else 0.0


def score(rows: Sequence[CaseRow]) -> dict[str, Any]:
    """The scorecard entry of one dataset key."""
    labelled = [r for r in rows if r.truth_kind is not None]
    confident = [r for r in rows if r.exit == "confident"]
    acs = [ac_at(rows, k) for k in range(1, 6)]
    hops = sum(r.hops for r in rows)
    return {
        "cases": len(rows),
        "ac1": round(acs[0], 4),
        "ac3": round(acs[2], 4),
        "ac5": round(acs[4], 4),
        "avg5": round(sum(acs) / 5, 4),
        "fault_kind_accuracy": (
            round(
                sum(1 for r in labelled if r.rank == 1 and r.predicted_kind == r.truth_kind) / len(labelled),
                4,
            )
            if labelled
            else None
        ),
        "confident_rate": round(len(confident) / len(rows), 4) if rows else 0.0,
        "confident_precision": (
            round(sum(1 for r in confident if r.rank == 1) / len(confident), 4) if confident else None
        ),
        "median_seconds": round(statistics.median(r.seconds for r in rows), 4) if rows else 0.0,
        # The share of propagation-path hops passing all forward-verification rules (PAVE).
        "path_verified_rate": round(sum(r.verified_hops for r in rows) / hops, 4) if hops else None,
    }


def scorecard(rows: Iterable[CaseRow]) -> dict[str, Any]:
    """`{"datasets": {key: entry}}` over every dataset key present."""
    by_key: dict[str, list[CaseRow]] = {}
    for row in rows:
        by_key.setdefault(row.key, []).append(row)
    return {"datasets": {key: score(group) for key, group in sorted(by_key.items())}}
