"""Recorded spans written as the series an OpenTelemetry Collector would have produced from them.

- span metrics connector (namespace `traces.span.metrics`, explicit histogram in milliseconds):
  `traces_span_metrics_calls_total{service_name, span_name, span_kind, status_code}` and
  `traces_span_metrics_duration_milliseconds_bucket|_count|_sum` with the same labels;
- service graph connector: a parent span in one service whose child span is in another is one request
  `client -> server`: `traces_service_graph_request_total{client, server}`, `..._failed_total` (either
  span's status is ERROR), `..._server_seconds` (the child's duration), `..._client_seconds` (the
  parent's). This is how the replay gives a call graph without a traces backend.

Both connectors flush every 15 s (`metrics_flush_interval`'s default); a span counts in the flush that
follows its end (a pair, in the flush that follows the later end). Recorded spans cover only some minutes
(the case's minute files and its normal minutes); samples are written for those stretches only, a gap of a
minute or more without any span being a hole in the recording rather than a quiet minute, and a series
starts at its first span.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rca.telemetry.model import Span
from rca.telemetry.replay.conventions import GRAPH_CLIENT, GRAPH_FAILED, GRAPH_REQUESTS, GRAPH_SERVER
from rca.telemetry.replay.histograms import COLLECTOR_BOUNDS_MS, COLLECTOR_BOUNDS_SECONDS
from rca.telemetry.replay.openmetrics import Exposition, Family, FloatArray, Kind
from rca.telemetry.replay.timeline import Timeline

FLUSH_INTERVAL = 15.0  # the connectors' metrics_flush_interval default
COVERAGE_GAP = 60.0  # spans are recorded in minute files: a minute without any is a missing file

SPAN_CALLS = Family("traces_span_metrics_calls", Kind.COUNTER, "Number of spans.")
SPAN_DURATION = Family(
    "traces_span_metrics_duration_milliseconds",
    Kind.HISTOGRAM,
    "Duration of spans.",
    "milliseconds",
    COLLECTOR_BOUNDS_MS,
)


@dataclass(frozen=True)
class SpanReplay:
    """What the spans of a case became."""

    spans: int
    pairs: int  # client -> server requests found
    stretches: int  # covered stretches of the timeline


def write_spans(expo: Exposition, spans: Sequence[Span], timeline: Timeline) -> SpanReplay:
    """Add span-metrics and service-graph series for `spans` (case times; shifted here)."""
    if not spans:
        return SpanReplay(0, 0, 0)
    frame = pd.DataFrame(
        {
            "span_id": [s.span_id for s in spans],
            "parent": [s.parent_span_id for s in spans],
            "service": [s.entity for s in spans],
            "name": [s.name for s in spans],
            "kind": ["SPAN_KIND_" + s.kind.value.upper() for s in spans],
            "status": ["STATUS_CODE_" + s.status.value.upper() for s in spans],
            "end": np.asarray([s.end for s in spans], dtype=np.float64) + timeline.shift,
            "seconds": np.asarray([max(s.duration, 0.0) for s in spans], dtype=np.float64),
        }
    ).drop_duplicates("span_id")
    frame["bin"] = timeline.snap(frame["end"].to_numpy(), FLUSH_INTERVAL)
    pairs = _pairs(frame, timeline)
    grid = covered(np.concatenate([frame["bin"].to_numpy(), pairs["bin"].to_numpy()]))
    stretches = int(np.sum(np.diff(grid) > FLUSH_INTERVAL + 1e-6)) + 1
    for (service, name, kind, status), group in frame.groupby(
        ["service", "name", "kind", "status"], sort=True
    ):
        labels = {
            "job": str(service),
            "service_name": str(service),
            "span_name": str(name),
            "span_kind": str(kind),
            "status_code": str(status),
        }
        times = _from_first(grid, group["bin"].to_numpy())
        counts = _per_bin(times, group["bin"].to_numpy(), np.ones(len(group)))
        expo.add(SPAN_CALLS, labels, times, counts)
        millis = group["seconds"].to_numpy() * 1000.0
        buckets = _bucket_counts(times, group["bin"].to_numpy(), millis, COLLECTOR_BOUNDS_MS)
        expo.add_histogram(
            SPAN_DURATION, labels, times, buckets, _per_bin(times, group["bin"].to_numpy(), millis)
        )
    for (client, server), group in pairs.groupby(["client", "server"], sort=True):
        labels = {"client": str(client), "server": str(server)}
        bins = group["bin"].to_numpy()
        times = _from_first(grid, bins)
        expo.add(GRAPH_REQUESTS, labels, times, _per_bin(times, bins, np.ones(len(group))))
        expo.add(
            GRAPH_FAILED, labels, times, _per_bin(times, bins, group["failed"].to_numpy(dtype=np.float64))
        )
        for family, column in ((GRAPH_SERVER, "server_seconds"), (GRAPH_CLIENT, "client_seconds")):
            values = group[column].to_numpy()
            expo.add_histogram(
                family,
                labels,
                times,
                _bucket_counts(times, bins, values, COLLECTOR_BOUNDS_SECONDS),
                _per_bin(times, bins, values),
            )
    return SpanReplay(len(frame), len(pairs), stretches)


def covered(bins: FloatArray) -> FloatArray:
    """Every flush time of the stretches the spans cover (a stretch ends at a gap of `COVERAGE_GAP`)."""
    marks = np.unique(bins)
    out = []
    start = prev = marks[0]
    for t in marks[1:]:
        if t - prev >= COVERAGE_GAP:
            out.append(np.arange(start, prev + FLUSH_INTERVAL / 2, FLUSH_INTERVAL))
            start = t
        prev = t
    out.append(np.arange(start, prev + FLUSH_INTERVAL / 2, FLUSH_INTERVAL))
    return np.asarray(np.concatenate(out), dtype=np.float64)


def _from_first(grid: FloatArray, bins: FloatArray) -> FloatArray:
    """The covered flush times from a series' first span on."""
    return np.asarray(grid[grid >= bins.min() - 1e-6], dtype=np.float64)


def _index(times: FloatArray, bins: FloatArray) -> np.ndarray:
    return np.searchsorted(times, bins - 1e-6)


def _per_bin(times: FloatArray, bins: FloatArray, weights: FloatArray) -> FloatArray:
    out = np.zeros(times.shape)
    np.add.at(out, _index(times, bins), weights)
    return out


def _bucket_counts(
    times: FloatArray, bins: FloatArray, values: FloatArray, bounds: tuple[float, ...]
) -> FloatArray:
    """(len(times), len(bounds) + 1) counts: column j holds values in (bounds[j-1], bounds[j]]."""
    out = np.zeros((times.size, len(bounds) + 1))
    np.add.at(out, (_index(times, bins), np.searchsorted(np.asarray(bounds), values, side="left")), 1.0)
    return out


def _pairs(frame: pd.DataFrame, timeline: Timeline) -> pd.DataFrame:
    """Client -> server requests: a span whose parent span belongs to another service."""
    parents = frame[["span_id", "service", "end", "seconds", "status"]].rename(
        columns={
            "span_id": "parent",
            "service": "client",
            "end": "client_end",
            "seconds": "client_seconds",
            "status": "client_status",
        }
    )
    joined = frame.merge(parents, on="parent", how="inner")
    joined = joined[joined["client"] != joined["service"]]
    error = "STATUS_CODE_ERROR"
    return pd.DataFrame(
        {
            "client": joined["client"],
            "server": joined["service"],
            # counted at the flush after the later of the two ends (a parent ends after its child)
            "bin": timeline.snap(
                np.maximum(joined["end"].to_numpy(), joined["client_end"].to_numpy()), FLUSH_INTERVAL
            ),
            "server_seconds": joined["seconds"],
            "client_seconds": joined["client_seconds"],
            "failed": ((joined["status"] == error) | (joined["client_status"] == error)).astype(float),
        }
    )
