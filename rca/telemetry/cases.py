"""Recorded public cases: the index reader and the per-dataset dispatch to the loaders.

`cases_index.csv` drives everything. This module reads only its *engine-facing* columns
(dataset, case_id, system, split, alert, telemetry, files); the ground-truth columns are read by
`rca.evaluation.ground_truth` alone, so nothing built here can carry an answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd

from rca.telemetry.recorded import (
    AlertHint,
    CaseFileError,
    CaseRef,
    RecordedCase,
    case_files,
    changerca,
    expand_files,
    nezha,
    parse_alert_hint,
    petshop,
    rcd,
    reading,
    time_span,
)

__all__ = [
    "DATASETS",
    "ENGINE_COLUMNS",
    "INDEX_NAME",
    "LOADERS",
    "AlertHint",
    "CaseFileError",
    "CaseIndexError",
    "CaseRef",
    "RecordedCase",
    "case_files",
    "expand_files",
    "find_case",
    "index_path",
    "load_case",
    "parse_alert_hint",
    "read_index",
    "reading",
    "time_span",
]

INDEX_NAME = "cases_index.csv"
# The only index columns the engine side may read (see module docstring).
ENGINE_COLUMNS = ("dataset", "case_id", "system", "split", "alert", "telemetry", "files")
_REQUIRED_VALUES = ("dataset", "case_id", "split")
# Each dataset's loader, by the name the index's `dataset` column gives it.
LOADERS: dict[str, Callable[[Path, CaseRef], RecordedCase]] = {
    "petshop": petshop.load,
    "rcd-sockshop": rcd.load,
    "nezha": nezha.load,
    "changerca-ob": changerca.load,
}
DATASETS = tuple(LOADERS)


class CaseIndexError(ValueError):
    """The case index is missing or malformed; the message names the file and the column."""


def index_path(data_dir: Path, index: Path | None = None) -> Path:
    """The index file to use: `index` when given, else `<data_dir>/cases_index.csv`."""
    return Path(index) if index is not None else Path(data_dir) / INDEX_NAME


def read_index(
    data_dir: Path,
    split: str | None = None,
    datasets: Iterable[str] | None = None,
    *,
    index: Path | None = None,
) -> list[CaseRef]:
    """Read the case index (engine-facing columns only), optionally filtered by split and dataset.

    Raises `CaseIndexError` naming the file (and column / row) when the index is absent, unreadable,
    lacks a required column, has an empty required value or repeats a case id.
    """
    path = index_path(data_dir, index)
    if not path.is_file():
        raise CaseIndexError(f"{path}: case index not found")
    try:
        header = pd.read_csv(path, nrows=0).columns.tolist()
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CaseIndexError(f"{path}: cannot be read as CSV ({exc})") from exc
    missing = [c for c in ENGINE_COLUMNS if c not in header]
    if missing:
        raise CaseIndexError(f"{path}: missing column(s) {', '.join(missing)}")
    try:
        # usecols keeps the ground-truth columns out of memory altogether.
        frame = pd.read_csv(path, usecols=list(ENGINE_COLUMNS), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, ValueError) as exc:
        raise CaseIndexError(f"{path}: malformed rows ({exc})") from exc
    wanted = set(datasets) if datasets is not None else None
    seen: set[tuple[str, str]] = set()
    refs: list[CaseRef] = []
    for i, row in enumerate(frame.itertuples(index=False), start=2):  # line 1 is the header
        rec = {c: str(getattr(row, c)).strip() for c in ENGINE_COLUMNS}
        for col in _REQUIRED_VALUES:
            if not rec[col]:
                raise CaseIndexError(f"{path}: line {i}: empty value in column {col}")
        key = (rec["dataset"], rec["case_id"])
        if key in seen:
            raise CaseIndexError(f"{path}: line {i}: duplicate case_id {rec['case_id']} in column case_id")
        seen.add(key)
        if split is not None and rec["split"] != split:
            continue
        if wanted is not None and rec["dataset"] not in wanted:
            continue
        refs.append(
            CaseRef(
                dataset=rec["dataset"],
                case_id=rec["case_id"],
                system=rec["system"],
                split=rec["split"],
                telemetry=rec["telemetry"],
                files=tuple(p.strip() for p in rec["files"].split(";") if p.strip()),
                alert_hint=rec["alert"] or None,
            )
        )
    return refs


def find_case(data_dir: Path, dataset: str, case_id: str, *, index: Path | None = None) -> CaseRef:
    """The index row of one case; KeyError naming it when absent."""
    for ref in read_index(data_dir, datasets=[dataset], index=index):
        if ref.case_id == case_id:
            return ref
    raise KeyError(f"{index_path(data_dir, index)}: no case {dataset}/{case_id}")


def load_case(data_dir: Path, ref: CaseRef) -> RecordedCase:
    """Load one case by its dataset's loader (lazy: files are parsed when queried)."""
    loader = LOADERS.get(ref.dataset)
    if loader is None:
        raise ValueError(f"case {ref.case_id}: unknown dataset {ref.dataset!r} (known: {', '.join(LOADERS)})")
    return loader(Path(data_dir), ref)
