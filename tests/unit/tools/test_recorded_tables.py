"""A recording hands its spans and log lines to the tools as frames (no object per span or line); the
frames must be the ones the tools build from the records every other source lists."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rca.investigation.engine import EngineConfig, windows
from rca.telemetry.cases import INDEX_NAME, find_case, load_case
from rca.tools.logs.profile import LogTable, _fetch
from rca.tools.spans import SpanTable, _frame

REPO = Path(__file__).resolve().parents[3]
DATA_DIR = Path(os.environ.get("ROOTLINE_DATA_DIR", REPO.parent / "shared" / "data")).resolve()
# a TrainTicket case: spans, and log lines with and without span ids
CASE = "nezha/2023-01-29/10"

pytestmark = pytest.mark.skipif(not (DATA_DIR / INDEX_NAME).is_file(), reason=f"no data at {DATA_DIR}")


class Listed:
    """The recording behind the protocol alone: records listed one object each."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def logs(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.logs(*args, **kwargs)

    def spans(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.spans(*args, **kwargs)


class Context:
    def __init__(self, source: Any) -> None:
        self.source = source


def test_a_recordings_frames_are_those_built_from_its_records() -> None:
    case = load_case(DATA_DIR, find_case(DATA_DIR, "nezha", CASE))
    source = case.source
    assert isinstance(source, SpanTable)
    assert isinstance(source, LogTable)
    assert not isinstance(Listed(source), SpanTable | LogTable)
    incident, baseline = windows(source, case.alert, EngineConfig())
    entities = sorted({*source.topology().names(), case.alert.entity})
    sizes = []
    for window in (incident, baseline):
        spans = _frame(Context(source), window)  # type: ignore[arg-type]
        pd.testing.assert_frame_equal(spans, _frame(Context(Listed(source)), window))  # type: ignore[arg-type]
        lines = _fetch(Context(source), entities, window)  # type: ignore[arg-type]
        pd.testing.assert_frame_equal(lines, _fetch(Context(Listed(source)), entities, window))  # type: ignore[arg-type]
        sizes.append((len(spans), len(lines)))
        assert lines["unit"].notna().all()  # a line without a span id is its trace's
    assert sizes[0][0] > 0  # the incident window holds spans and lines
    assert sizes[0][1] > 0
