"""Replay one recorded case as a live cluster: OpenMetrics text, a backfilled Prometheus data dir, the
rule file and both servers' configuration, and a manifest saying what was written.

Layout of the output folder:

    metrics.om                  the case's metrics and span-derived series (OpenMetrics, `# EOF`)
    prometheus/data/            TSDB blocks from `promtool tsdb create-blocks-from openmetrics`
    prometheus/prometheus.yml   rule file + Alertmanager address; no scrape job
    prometheus/rules.yml        the entry service's alert rules
    alertmanager/alertmanager.yml, alertmanager/intake-token (0600)
    replay.json                 the manifest (timing, series counts, sizes, flags, the mapping used)

The case is read through the recorded loaders (`rca.telemetry.cases.load_case`), so every dataset takes
one path and only the engine-facing index columns are read; nothing here opens ground truth.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rca.telemetry.cases import CaseRef, RecordedCase, load_case
from rca.telemetry.model import MetricSeries, Modality, TimeWindow
from rca.telemetry.replay.conventions import ClusterWriter, combine, write_rollouts, write_scrape_health
from rca.telemetry.replay.openmetrics import Exposition
from rca.telemetry.replay.rules import (
    alertmanager_config,
    prometheus_config,
    recorded_alert,
    rule_file,
    signals,
    write_yaml,
)
from rca.telemetry.replay.spans import write_spans
from rca.telemetry.replay.timeline import Timeline, duration_text

OPENMETRICS = "metrics.om"
MANIFEST = "replay.json"
DEFAULT_ALERTMANAGER = "127.0.0.1:9093"
DEFAULT_WEBHOOK = "http://127.0.0.1:8000/api/v1/webhooks/alertmanager/"


class ReplayError(RuntimeError):
    """The replay could not be written (output folder in use, promtool missing or failing)."""


class OutputInUse(ReplayError):
    """The output folder is a file or holds files already."""


@dataclass(frozen=True)
class ReplayPaths:
    """Where a replay's files are."""

    root: Path

    def check_fresh(self) -> None:
        """OutputInUse unless the folder is absent or empty."""
        if self.root.exists() and not self.root.is_dir():
            raise OutputInUse(f"{self.root} is not a folder")
        if self.root.is_dir() and any(self.root.iterdir()):
            raise OutputInUse(f"{self.root} is not empty: a replay needs a fresh folder")

    @property
    def openmetrics(self) -> Path:
        """The OpenMetrics text."""
        return self.root / OPENMETRICS

    @property
    def tsdb(self) -> Path:
        """Prometheus's data dir (backfilled)."""
        return self.root / "prometheus" / "data"

    @property
    def prometheus_config(self) -> Path:
        """prometheus.yml."""
        return self.root / "prometheus" / "prometheus.yml"

    @property
    def rules(self) -> Path:
        """The rule file."""
        return self.root / "prometheus" / "rules.yml"

    @property
    def alertmanager_config(self) -> Path:
        """alertmanager.yml."""
        return self.root / "alertmanager" / "alertmanager.yml"

    @property
    def token(self) -> Path:
        """The intake token Alertmanager presents (Bearer)."""
        return self.root / "alertmanager" / "intake-token"

    @property
    def manifest(self) -> Path:
        """replay.json."""
        return self.root / MANIFEST


def namespace_of(system: str) -> str:
    """The Kubernetes namespace a system's pods are replayed in: its name as a DNS label."""
    slug = re.sub(r"[^a-z0-9]+", "-", system.lower()).strip("-")
    return slug[:63].strip("-") or "default"


def scrape_step(series: list[MetricSeries]) -> float:
    """The case's scrape interval: the median of its series' median intervals, in whole seconds (as a
    scrape interval is configured; collectors' clocks drift by milliseconds), at least 1 s."""
    steps = [
        float(np.median(np.diff(np.unique(s.timestamps)))) for s in series if len(np.unique(s.timestamps)) > 1
    ]
    if not steps:
        raise ValueError("no metric series with two points: nothing to replay")
    return max(1.0, float(round(np.median(steps))))


def gather(case: RecordedCase) -> list[tuple[MetricSeries, TimeWindow]]:
    """Every metric series of every recording of the case, with the recording's window."""
    out: list[tuple[MetricSeries, TimeWindow]] = []
    for rec in case.source.recordings:
        for entity in rec.entities():
            out.extend((s, rec.window) for s in rec.load(entity) if len(s))
    return out


def build(case: RecordedCase, now: float) -> tuple[Exposition, Timeline, dict[str, Any]]:
    """The case's exposition on the replay timeline, and what was made of it (for the manifest)."""
    found = gather(case)
    timeline = Timeline.place(now, case.alert.fired_at, scrape_step([s for s, _ in found]))
    case_window = case.source.recordings[0].window
    placed = combine(
        ((s, timeline.place_before(window, case_window)) for s, window in found), timeline.nearest
    )
    expo = Exposition()
    namespace = namespace_of(case.ref.system)
    writer = ClusterWriter(expo, namespace, timeline.step)
    writer.write(placed)
    history = case.source.events(TimeWindow(0.0, math.inf))
    rollouts = write_rollouts(expo, namespace, history, timeline.shift, lambda t: _grid_from(timeline, t))
    details: dict[str, Any] = {
        "namespace": namespace,
        "mapping": {name: sorted(fams) for name, fams in sorted(writer.written.items())},
        "not_replayed": dict(sorted(writer.skipped.items())),
        "rollouts": rollouts,
    }
    if Modality.TRACES in case.source.modalities():
        spans = case.source.spans(TimeWindow(0.0, math.inf), limit=sys.maxsize)
        summary = write_spans(expo, spans, timeline)
        details["spans"] = {"spans": summary.spans, "pairs": summary.pairs, "stretches": summary.stretches}
    details["scrape_jobs"] = write_scrape_health(expo, lambda t: _grid_from(timeline, t))
    return expo, timeline, details


def _grid_from(timeline: Timeline, start: float) -> np.ndarray:
    """The scrape grid from `start` (snapped up onto it) to the replayed present."""
    first = float(timeline.snap(np.array([start]))[0])
    return np.arange(first, timeline.now + timeline.step / 2, timeline.step)


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        raise ReplayError(
            "promtool not found: install Debian's `prometheus` package (python3 dev.py test installs it)"
        )
    return found


def backfill(openmetrics: Path, tsdb: Path) -> float:
    """`promtool tsdb create-blocks-from openmetrics` into `tsdb`; returns the seconds it took."""
    tsdb.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    proc = subprocess.run(  # noqa: S603  (fixed arguments, no shell)
        [_promtool(), "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(tsdb)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise ReplayError(f"promtool could not backfill {openmetrics}: {' / '.join(tail)}")
    return time.monotonic() - started


def _size(path: Path) -> int:
    return (
        sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        if path.is_dir()
        else path.stat().st_size
    )


def replay_case(
    data_dir: Path,
    ref: CaseRef,
    out: Path,
    *,
    token: str,
    webhook: str = DEFAULT_WEBHOOK,
    alertmanager: str = DEFAULT_ALERTMANAGER,
    now: float | None = None,
) -> dict[str, Any]:
    """Write the replay of case `ref` under `out` (which must be absent or empty); returns the manifest.

    `now` (unix seconds, default the current time) is the replayed present; `token` the intake token
    Alertmanager presents to `webhook`; `alertmanager` the host:port Prometheus sends alerts to.
    """
    paths = ReplayPaths(Path(out))
    paths.check_fresh()
    started = time.monotonic()
    case = load_case(data_dir, ref)
    expo, timeline, details = build(case, time.time() if now is None else now)
    entry = case.alert.entity
    for folder in (paths.tsdb, paths.alertmanager_config.parent):
        folder.mkdir(parents=True, exist_ok=True)
    with paths.openmetrics.open("w", encoding="utf-8") as fh:
        samples = expo.write(fh, not_after=timeline.now)
    written = time.monotonic() - started
    backfill_seconds = backfill(paths.openmetrics, paths.tsdb)
    found = signals(expo, entry, details["namespace"], timeline.window)
    write_yaml(paths.rules, rule_file(found, entry, timeline))
    write_yaml(paths.prometheus_config, prometheus_config(paths.rules.resolve(), alertmanager))
    paths.token.write_text(token)
    os.chmod(paths.token, 0o600)
    write_yaml(paths.alertmanager_config, alertmanager_config(webhook, paths.token.resolve()))
    earliest = expo.earliest()
    flags = {
        "--storage.tsdb.retention.time": f"{timeline.retention_days(earliest or timeline.now)}d",
        "--query.lookback-delta": duration_text(timeline.lookback_delta),
    }
    manifest: dict[str, Any] = {
        "case": {"dataset": ref.dataset, "case_id": ref.case_id, "system": ref.system},
        "entry_service": entry,
        "timeline": {
            "now": timeline.now,
            "onset": timeline.onset,
            "shift_seconds": timeline.shift,
            "recorded_alert_at": case.alert.fired_at,
            "scrape_step_seconds": timeline.step,
            "rate_window": duration_text(timeline.window),
            "baseline_offset": duration_text(timeline.baseline_offset),
            "earliest_sample": earliest,
        },
        "rules": [s.alert for s in found],
        "recorded_alert": recorded_alert(case.alert, found, timeline),
        "series": expo.series_count(),
        "series_total": sum(expo.series_count().values()),
        "samples": samples,
        "openmetrics_bytes": paths.openmetrics.stat().st_size,
        "tsdb_bytes": _size(paths.tsdb),
        "write_seconds": round(written, 3),
        "backfill_seconds": round(backfill_seconds, 3),
        "prometheus_flags": flags,
        "paths": {
            "openmetrics": str(paths.openmetrics),
            "tsdb": str(paths.tsdb),
            "prometheus_config": str(paths.prometheus_config),
            "rules": str(paths.rules),
            "alertmanager_config": str(paths.alertmanager_config),
            "manifest": str(paths.manifest),
        },
        **details,
    }
    paths.manifest.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
