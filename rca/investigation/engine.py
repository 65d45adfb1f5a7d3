"""The investigation engine's entry point: telemetry + alert in, an InvestigationResult out."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rca.core.calibration import CalibrationMap
from rca.core.gate import GateBudget
from rca.core.modes import Mode
from rca.investigation.calibration import load_calibration
from rca.investigation.conclusion import conclude
from rca.investigation.controller import Controller, LoopSettings, Progress
from rca.investigation.policy import OfflinePolicy, Policy
from rca.investigation.result import InvestigationResult
from rca.investigation.seed import seed
from rca.telemetry.model import Alert, TelemetryError, TelemetrySource, TimeWindow
from rca.tools.base import ToolContext
from rca.tools.registry import ALL_TOOLS, instances, record_facts, seedings, usable

MINUTE = 60.0
# A baseline's median and MAD need three samples (rca.tools.stats.deviation reads none from fewer).
BASELINE_SAMPLES = 3
# A window starting this long after a sample leaves that sample to the baseline (windows are [start, end)).
_AFTER = 1e-3


@dataclass(frozen=True)
class EngineConfig:
    """Everything that shapes an investigation; the defaults are the product's."""

    max_turns: int = 10
    wall_clock_s: float = 240.0
    gate_mode: Mode = Mode.ACTIVE
    cap_mode: Mode = Mode.ACTIVE
    belief_propagation: bool = True
    blame_propagation: bool = True
    refine: bool = True  # drill leaders down to fault kinds and details (rca.core.levels)
    tools: frozenset[str] = field(default_factory=lambda: frozenset(ALL_TOOLS))
    seeds: int = 5
    # The incident window around the alert's firing time, and the baseline before it when the
    # source knows of no recorded normal period.
    before_onset_s: float = 10 * MINUTE
    after_onset_s: float = 5 * MINUTE
    baseline_s: float = 60 * MINUTE
    # The confident exit's calibration (rca/investigation/calibration.json); None: the gate alone.
    calibration: CalibrationMap | None = field(default_factory=load_calibration)
    # Active: a validated exit stands only when the map's probability reaches its threshold (issue #20).
    # Shadow records and shows the probability and lets the gate's exit stand (docs/evaluation.md §3).
    calibration_mode: Mode = Mode.ACTIVE
    # Makes each investigation's policy (a policy keeps per-investigation state such as its budget).
    policy: Callable[[], Policy] = OfflinePolicy


def windows(source: TelemetrySource, alert: Alert, config: EngineConfig) -> tuple[TimeWindow, TimeWindow]:
    """The incident window and the baseline window for `alert`.

    The incident window reaches `before_onset_s` back from the alert, and the baseline is the source's
    normal recording or else what it holds before the window. When that part holds fewer than
    `BASELINE_SAMPLES` samples of the alerting entity (the recording began shortly before the alert),
    the window starts after the entity's first `BASELINE_SAMPLES` samples instead, if they came before
    the alert: they are the only normal the recording holds, and without them no deviation is measured."""
    onset = alert.fired_at
    held = source.time_range()
    start = min(max(held.start, onset - config.before_onset_s), held.end)
    before = source.baseline_window(start)
    if before is None or before.end == start:
        stamps = _sample_times(source, alert.entity, before.start if before else held.start, onset)
        if sum(1 for t in stamps if t < start) < BASELINE_SAMPLES <= len(stamps):
            start = max(start, stamps[BASELINE_SAMPLES - 1] + _AFTER)
    incident = TimeWindow(start, max(start, min(held.end, onset + config.after_onset_s)))
    baseline = source.baseline_window(incident.start)
    if baseline is None:
        begin = max(held.start, incident.start - config.baseline_s)
        baseline = TimeWindow(min(begin, incident.start), incident.start)
    return incident, baseline


def _sample_times(source: TelemetrySource, entity: str, begin: float, end: float) -> list[float]:
    """When the entity's first metric was sampled in [begin, end), in order; none when that span is
    empty (an alert older than a live source's horizon) or the source cannot answer (an unreachable
    backend: the tools meet it too, and report it)."""
    if end <= begin:
        return []
    try:
        names = list(source.metric_names(entity))[:1]
        series = source.metrics(entity, TimeWindow(begin, end), names)[:1] if names else []
    except TelemetryError:
        return []
    return sorted(
        float(t) for s in series for t, v in zip(s.timestamps, s.values, strict=True) if math.isfinite(v)
    )


def investigate(
    source: TelemetrySource,
    alert: Alert,
    config: EngineConfig = EngineConfig(),  # frozen, so sharing the default is safe
    policy: Policy | None = None,
    priors: Mapping[str, float] | None = None,
    clock: Callable[[], float] = time.monotonic,
    progress: Progress | None = None,
) -> InvestigationResult:
    """Investigate one incident: seed suspects, run the gated loop, conclude from what the tools recorded."""
    incident, baseline = windows(source, alert, config)
    ctx = ToolContext(source, alert, incident, baseline, source.topology())
    available = source.modalities()
    specs = usable(config.tools, available)
    suspects = seed(ctx, seedings(specs), priors, config.blame_propagation)
    settings = LoopSettings(
        budget=GateBudget(max_turns=config.max_turns, wall_clock_s=config.wall_clock_s),
        gate_mode=config.gate_mode,
        belief_propagation=config.belief_propagation,
        seeds=config.seeds,
        refine=config.refine,
        calibration=config.calibration,
        calibration_mode=config.calibration_mode,
    )
    chosen = policy or config.policy()
    controller = Controller(ctx, chosen, instances(specs), settings, clock, progress)
    loop = controller.run(suspects)
    facts = record_facts(ctx, specs, available)
    return conclude(facts, loop, suspects, settings, chosen, config.cap_mode)
