"""Ground truth of recorded cases, for scoring only.

This is the only code that reads the index's answer columns (root_cause_service, root_cause_detail,
fault_type) and the injected propagation paths of a synthetic suite (`PATHS_NAME` beside its index,
written by `rca.evaluation.inject`). The investigation engine never imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rca.telemetry.cases import CaseIndexError, CaseRef, index_path

TRUTH_COLUMNS = ("dataset", "case_id", "root_cause_service", "fault_type", "root_cause_detail")
PATHS_NAME = "propagation_paths.csv"  # case_id, path (entities root first, joined by " > ")
PATH_SEPARATOR = " > "


@dataclass(frozen=True, slots=True)
class GroundTruth:
    """The answer of one case: root-cause service, fault (or defect) type and any finer detail."""

    service: str
    fault_type: str
    detail: str
    path: tuple[str, ...] = ()  # the injected propagation path, root cause first (synthetic cases)


def ground_truth(data_dir: Path, ref: CaseRef, *, index: Path | None = None) -> GroundTruth:
    """The answer of `ref`, read from the index's truth columns.

    Raises `CaseIndexError` naming the file / column when the index lacks them, KeyError when the case
    is not in the index.
    """
    path = index_path(data_dir, index)
    if not path.is_file():
        raise CaseIndexError(f"{path}: case index not found")
    header = pd.read_csv(path, nrows=0).columns.tolist()
    missing = [c for c in TRUTH_COLUMNS if c not in header]
    if missing:
        raise CaseIndexError(f"{path}: missing column(s) {', '.join(missing)}")
    frame = pd.read_csv(path, usecols=list(TRUTH_COLUMNS), dtype=str, keep_default_na=False)
    rows = frame[(frame["dataset"] == ref.dataset) & (frame["case_id"] == ref.case_id)]
    if rows.empty:
        raise KeyError(f"{path}: no case {ref.dataset}/{ref.case_id}")
    row = rows.iloc[0]
    return GroundTruth(
        service=str(row["root_cause_service"]),
        fault_type=str(row["fault_type"]),
        detail=str(row["root_cause_detail"]),
        path=_paths(path.parent / PATHS_NAME).get(ref.case_id, ()),
    )


def _paths(path: Path) -> dict[str, tuple[str, ...]]:
    """The injected paths by case id; empty when the file is absent (recorded datasets label none)."""
    if not path.is_file():
        return {}
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if not {"case_id", "path"} <= set(frame.columns):
        raise CaseIndexError(f"{path}: needs columns case_id, path")
    return {
        str(c): tuple(p.strip() for p in str(v).split(PATH_SEPARATOR) if p.strip())
        for c, v in zip(frame["case_id"], frame["path"], strict=True)
    }
