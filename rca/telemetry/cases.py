"""Recorded public cases: the index reader and the per-dataset dispatch.

`cases_index.csv` drives everything. This module reads only its *engine-facing* columns
(dataset, case_id, system, split, alert, telemetry, files); the ground-truth columns are read by
`rca.evaluation.ground_truth` alone, so nothing built here can carry an answer.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from rca.telemetry.model import Alert, TimeWindow
from rca.telemetry.recorded.source import RecordedSource

INDEX_NAME = "cases_index.csv"
# The only index columns the engine side may read (see module docstring).
ENGINE_COLUMNS = ("dataset", "case_id", "system", "split", "alert", "telemetry", "files")
_REQUIRED_VALUES = ("dataset", "case_id", "split")
DATASETS = ("petshop", "rcd-sockshop", "nezha", "changerca-ob")


class CaseIndexError(ValueError):
    """The case index is missing or malformed; the message names the file and the column."""


class CaseFileError(ValueError):
    """A case's data file is damaged (truncated, columns missing, values not numbers); names the file."""


# How a damaged file shows when parsed: pandas, numpy and json raise ValueError (parse errors, bad
# numbers, bad UTF-8), KeyError / IndexError (missing columns), TypeError (a JSON value of the wrong
# kind) or OverflowError (a number too large, e.g. 1e400 as an int); a damaged gzip stream raises
# EOFError (cut short), zlib.error or gzip.BadGzipFile (corrupted). A missing or unreadable file
# (other OSErrors) is not a damaged one and passes through.
_DAMAGED = (
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    OverflowError,
    EOFError,
    zlib.error,
    gzip.BadGzipFile,
)


@contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Re-raise a parse failure inside as a CaseFileError naming `path`.

    pandas, numpy, json and gzip report a damaged file without saying which file (see `_DAMAGED`);
    a loader wraps each file's reading in this.
    """
    try:
        yield
    except CaseFileError:
        raise
    except _DAMAGED as exc:
        raise CaseFileError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from exc


@dataclass(frozen=True, slots=True)
class CaseRef:
    """One row of the case index, without its ground truth."""

    dataset: str
    case_id: str
    system: str
    split: str
    telemetry: str
    files: tuple[str, ...]  # the index's `files` entries, split on ';' (may hold {a,b} patterns)
    alert_hint: str | None  # the index's `alert` column as given ("" -> None)


@dataclass(frozen=True)
class RecordedCase:
    """A loaded case: the telemetry source, its alert (with the onset hint) and its recorded window."""

    ref: CaseRef
    source: RecordedSource
    alert: Alert
    window: TimeWindow


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
    # Imported here so importing the index reader does not pull in every loader.
    from rca.telemetry.recorded import changerca, nezha, petshop, rcd

    loaders = {
        "petshop": petshop.load,
        "rcd-sockshop": rcd.load,
        "nezha": nezha.load,
        "changerca-ob": changerca.load,
    }
    if ref.dataset not in loaders:
        raise ValueError(f"case {ref.case_id}: unknown dataset {ref.dataset!r} (known: {', '.join(loaders)})")
    return loaders[ref.dataset](Path(data_dir), ref)


# --- helpers shared by the loaders --------------------------------------------------------------
def time_span(stamps: npt.ArrayLike, step: float) -> TimeWindow:
    """[first, last + step) of the finite times in `stamps` (unix seconds); ValueError when none is.

    An empty or timeless table would otherwise give a NaN window, which overlaps nothing and so hides
    the whole case without an error; a loader calls this inside `reading(path)`.
    """
    values = np.asarray(stamps, dtype=np.float64)
    values = values[np.isfinite(values)]
    if not values.size:
        raise ValueError("no row with a time")
    return TimeWindow(float(values.min()), float(values.max()) + step)


_BRACES = re.compile(r"\{([^{}]*)\}")


def expand_files(pattern: str) -> list[str]:
    """Expand shell-style `{a,b}` groups of an index `files` entry (no globbing)."""
    m = _BRACES.search(pattern)
    if m is None:
        return [pattern]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out.extend(expand_files(pattern[: m.start()] + alt.strip() + pattern[m.end() :]))
    return out


def case_files(ref: CaseRef) -> list[str]:
    """Every path named by the case's `files` column, braces expanded, labels like `normal:` dropped."""
    out: list[str] = []
    for entry in ref.files:
        entry = re.sub(r"^\w+:\s*", "", entry)  # e.g. "normal: nezha/construct_data/D/"
        out.extend(expand_files(entry))
    return out


_HINT_TIME = re.compile(r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})")
_HINT_SIGNAL = re.compile(r"^\s*(?P<entity>[^:@]+):(?P<metric>[^@]+)@")


@dataclass(frozen=True, slots=True)
class AlertHint:
    """What the index `alert` column says: the firing time, and the entity / metric when named."""

    fired_at: float
    entity: str | None
    metric: str | None
    text: str


def parse_alert_hint(text: str | None) -> AlertHint | None:
    """Parse `entity:metric@YYYY-mm-dd HH:MM:SS` or `detected YYYY-mm-dd HH:MM:SS` (UTC)."""
    if not text:
        return None
    m = _HINT_TIME.search(text)
    if m is None:
        raise ValueError(f"alert hint without a time: {text!r}")
    fired = datetime.fromisoformat(m.group(1).replace("T", " ")).replace(tzinfo=UTC).timestamp()
    sig = _HINT_SIGNAL.match(text)
    return AlertHint(
        fired_at=fired,
        entity=sig.group("entity").strip() if sig else None,
        metric=sig.group("metric").strip() if sig else None,
        text=text,
    )
