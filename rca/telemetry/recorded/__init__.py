"""Loaders that turn the public datasets under `shared/data/` into recorded telemetry sources, and what
every loader shares: the case's index row, what a loader returns, and the helpers for reading a case's
files and its alert hint.

The loaders (`petshop`, `rcd`, `nezha`, `changerca`) import this package and `rca.telemetry.cases` (the
index reader) imports the loaders, so the dependency runs one way.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rca.telemetry.model import Alert, TimeWindow
from rca.telemetry.recorded.source import RecordedSource


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
