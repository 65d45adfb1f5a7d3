"""Scores of the RCA literature, computed from per-case rows.

AC@k is the share of cases whose true root-cause service is among the top k candidates; Avg@5 is
the mean of AC@1..AC@5. Fault kinds are compared after mapping each dataset's labels onto the
engine's kinds (the mapping is dataset knowledge and lives here, on the evaluation side).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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
    # the injector's kinds (rca.evaluation.inject) are the engine's own names
    "latency": "latency",
    "errors": "errors",
    "cpu": "cpu",
    "memory": "memory",
    "pod_failure": "pod_failure",
    "bad_deploy": "bad_deploy",
}
# Datasets whose every case is a defective change: the kind is a bad deploy whatever the defect.
_CHANGE_DATASETS = frozenset({"changerca-ob"})


# Datasets that label the detail, and how a named detail is compared with the label: Nezha names the
# pod the fault was injected into; ChangeRCA the defective release among the concurrent ones (the
# root-cause service's), which a named change of the right service matches.
_POD_DETAIL_DATASETS = frozenset({"nezha"})


def detail_correct(dataset: str, truth_service: str, truth_detail: str, top: str, detail: str) -> bool | None:
    """Whether the named detail matches the case's label; None when the dataset labels no detail."""
    if dataset in _POD_DETAIL_DATASETS and truth_detail:
        return detail == f"instance:{truth_detail}"
    if dataset in _CHANGE_DATASETS and truth_detail:
        released = truth_detail.partition(":")[2].replace(" ", "").split(",")
        return top == truth_service and truth_service in released and detail.startswith("change:")
    return None


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
    predicted_detail: str = ""  # what the detail level named for the root cause
    detail_ok: bool | None = None  # whether it matches the label; None where none is labelled
    anchor: str = ""  # the failure anchor of a "no confident root cause" exit
    guidance_steps: int = 0  # the next steps that passed the guidance gate
    label: str = ""  # the dataset's own fault label
    features: Mapping[str, float] = field(default_factory=dict)  # rca.core.calibration.features
    route: tuple[str, ...] = ()  # the reported propagation path, root cause first, symptom last
    truth_path: tuple[str, ...] = ()  # the injected path (synthetic cases), root first
    validated: bool = False  # the gate's validated exit before calibration (what calibration is fitted on)

    @property
    def key(self) -> str:
        """The scorecard key: dataset and system as the index names them."""
        return f"{self.dataset}/{self.system}"

    @property
    def day(self) -> str:
        """The recording day the case id names (its dataset key when it names none)."""
        m = _DAY.search(self.case_id)
        return f"{self.dataset}/{m.group(0)}" if m else self.key

    @property
    def correct(self) -> bool:
        """Whether the top candidate is the true root cause."""
        return self.rank == 1

    @property
    def path_ok(self) -> bool | None:
        """Whether the reported path is exactly the injected one; None when no path is labelled."""
        return self.route == self.truth_path if self.truth_path else None

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
            "validated": int(self.validated),
            "tier": self.tier,
            "capped_confidence": f"{self.capped_confidence:.4f}",
            "seconds": f"{self.seconds:.3f}",
            "predicted_kind": self.predicted_kind or "",
            "truth_kind": self.truth_kind or "",
            "hops": self.hops,
            "verified_hops": self.verified_hops,
            "predicted_detail": self.predicted_detail,
            "detail_ok": "" if self.detail_ok is None else int(self.detail_ok),
            "anchor": self.anchor,
            "guidance_steps": self.guidance_steps,
            "label": self.label,
            "route": ">".join(self.route),
            "truth_path": ">".join(self.truth_path),
            **{f"f_{k}": f"{v:.4f}" for k, v in sorted(self.features.items())},
        }


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def ac_at(rows: Sequence[CaseRow], k: int) -> float:
    """AC@k."""
    return sum(1 for r in rows if r.rank is not None and r.rank <= k) / len(rows) if rows else 0.0


def score(rows: Sequence[CaseRow]) -> dict[str, Any]:
    """The scorecard entry of one dataset key."""
    labelled = [r for r in rows if r.truth_kind is not None]
    detailed = [r for r in rows if r.detail_ok is not None]
    confident = [r for r in rows if r.exit == "confident"]
    unconcluded = [r for r in rows if r.exit != "confident"]
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
        # The share of cases whose named detail (the pod, the release) matches the label, where labelled.
        "detail_accuracy": (
            round(sum(1 for r in detailed if r.detail_ok) / len(detailed), 4) if detailed else None
        ),
        "confident_rate": round(len(confident) / len(rows), 4) if rows else 0.0,
        "confident_precision": (
            round(sum(1 for r in confident if r.rank == 1) / len(confident), 4) if confident else None
        ),
        "median_seconds": round(statistics.median(r.seconds for r in rows), 4) if rows else 0.0,
        # The share of propagation-path hops passing all forward-verification rules (PAVE).
        "path_verified_rate": round(sum(r.verified_hops for r in rows) / hops, 4) if hops else None,
        # Why the runs that could not conclude stopped, and how many of them left a next step.
        "anchors": dict(sorted(Counter(r.anchor or "none" for r in unconcluded).items())),
        "unconcluded_with_steps": sum(1 for r in unconcluded if r.guidance_steps > 0),
        # Synthetic cases: the share whose reported path is exactly the injected one.
        "path_accuracy": (
            round(sum(1 for r in pathed if r.path_ok) / len(pathed), 4)
            if (pathed := [r for r in rows if r.path_ok is not None])
            else None
        ),
    }


def scorecard(rows: Iterable[CaseRow]) -> dict[str, Any]:
    """`{"datasets": {key: entry}}` over every dataset key present."""
    by_key: dict[str, list[CaseRow]] = {}
    for row in rows:
        by_key.setdefault(row.key, []).append(row)
    return {"datasets": {key: score(group) for key, group in sorted(by_key.items())}}
