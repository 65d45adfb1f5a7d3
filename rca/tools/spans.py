"""The investigation's spans as one frame, fetched once and shared by the tools that read spans (the
traces tool, and the logs tool that anchors its statement pairs on span starts)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd

from rca.telemetry.model import Span, SpanStatus, TimeWindow
from rca.tools.base import ToolContext
from rca.tools.counts import Comparison, fetch_compared

FRAME_KEY = "spans.frame"
MAX_SPANS = 1_000_000
# How spans' times are compared, by the traces analysis and from span metrics alike:
EPSILON = 1e-4  # seconds added before taking logs of span times (sub-0.1 ms is noise)
MIN_SPANS = 5  # an operation needs this many spans in both periods to be compared
# The floor of the peer spread of a service's shift in span time: a shift under ~10 % (log units) never
# stands out, however quiet the other services are.
LATENCY_FLOOR = 0.1


def entity_mean(values: pd.Series, weights: pd.Series) -> pd.Series:
    """Per-entity mean of `values` weighted by `weights` (index: entity, operation)."""
    num = (values * weights).groupby(level="entity").sum()
    return num / weights.groupby(level="entity").sum()


def _is_error(status: str, attributes: object) -> bool:
    if status == SpanStatus.ERROR.value:
        return True
    if not isinstance(attributes, dict) or not attributes:
        return False
    if attributes.get("error") in (True, "true", "True", 1):
        return True
    code = attributes.get("http.status_code", attributes.get("http.response.status_code"))
    try:
        return code is not None and int(code) >= 500
    except (TypeError, ValueError):
        return False


def _has_outcome(status: str, attributes: object) -> bool:
    """Whether a span records how its work ended (a status, an error flag or an HTTP status)."""
    if status != SpanStatus.UNSET.value:
        return True
    keys = ("error", "http.status_code", "http.response.status_code")
    return isinstance(attributes, dict) and any(k in attributes for k in keys)


def _outcomes(spans: list[Span]) -> tuple[list[bool], list[bool]]:
    """Per span, (whether it failed, whether it records how its work ended), in one pass: most spans
    carry no attributes, and then the status alone decides both."""
    error: list[bool] = []
    outcome: list[bool] = []
    for s in spans:
        status = s.status.value
        if s.attributes:
            attributes = dict(s.attributes)
            error.append(_is_error(status, attributes))
            outcome.append(_has_outcome(status, attributes))
        else:
            error.append(status == SpanStatus.ERROR.value)
            outcome.append(status != SpanStatus.UNSET.value)
    return error, outcome


@runtime_checkable
class SpanTable(Protocol):
    """A source that hands over the spans `spans` would list as one frame of their fields (a recording
    read from files holds them so): no object per span, which costs a recorded investigation a tenth of
    its time. Its spans carry no attributes."""

    def span_table(self, window: TimeWindow, entity: str | None = None, limit: int = 200_000) -> pd.DataFrame:
        """The rows of `spans(window, entity, limit)`, in its order: ids, entity, name, times, status."""
        ...


def _frame_of_table(table: pd.DataFrame) -> pd.DataFrame:
    """`_frame` of a span table: the same columns (built from lists, as there, so that pandas infers the
    same types), an outcome only where a status records one."""
    status = table["status"].astype(str)
    return pd.DataFrame(
        {
            "trace_id": table["trace_id"].astype(str).tolist(),
            "span_id": table["span_id"].astype(str).tolist(),
            "parent": [p if isinstance(p, str) and p else None for p in table["parent_span_id"].tolist()],
            "entity": table["entity"].astype(str).tolist(),
            "name": table["name"].astype(str).tolist(),
            "start": table["start"].to_numpy(dtype=np.float64),
            "end": table["end"].to_numpy(dtype=np.float64),
            "error": (status == SpanStatus.ERROR.value).tolist(),
            "outcome": (status != SpanStatus.UNSET.value).tolist(),
        }
    )


def _frame(ctx: ToolContext, window: TimeWindow) -> pd.DataFrame:
    if isinstance(ctx.source, SpanTable):
        return _frame_of_table(ctx.source.span_table(window, limit=MAX_SPANS))
    spans = ctx.source.spans(window, limit=MAX_SPANS)
    error, outcome = _outcomes(spans)
    return pd.DataFrame(
        {
            "trace_id": [s.trace_id for s in spans],
            "span_id": [s.span_id for s in spans],
            "parent": [s.parent_span_id for s in spans],
            "entity": [s.entity for s in spans],
            "name": [s.name for s in spans],
            "start": np.array([s.start for s in spans], dtype=np.float64),
            "end": np.array([s.end for s in spans], dtype=np.float64),
            "error": error,
            "outcome": outcome,
        }
    )


def span_frame(ctx: ToolContext) -> tuple[pd.DataFrame, Comparison]:
    """The investigation's spans (one row each: ids, entity, name, times, error and outcome flags)
    with their reference / observed comparison; fetched once per investigation (cached in `ctx.cache`)
    for every reader."""
    cached = ctx.cache.get(FRAME_KEY)
    if isinstance(cached, tuple):
        return cached
    found = fetch_compared(ctx, lambda w: _frame(ctx, w), "start")
    ctx.cache[FRAME_KEY] = found
    return found
