"""Synthetic faults on recorded normal telemetry: a check that the engine generalises (issue #20, §2).

An injector takes a recorded *normal* period of one system, injects one fault of a chosen kind into a
chosen entity and writes a case folder in that dataset's own file layout, so the existing loaders read
it unchanged, plus a `cases_index.csv` row with the public index's columns (split `synthetic`) and the
injected propagation path (`propagation_paths.csv`, read only by `rca.evaluation.ground_truth`).

The physics every injector applies (see docs/evaluation.md for each system's files):

- The fault sits in one operation of the entity, used by one caller chain: the path from the entry
  service to the entity (a shortest call path of the dataset's real call graph, drawn by the seed among
  equals). Its effect reaches the callers on that path and nothing else; callees never change.
- `latency`: the entity's own server time rises by a delay; each caller on the path waits that delay
  too (its server and client latency rise by the same amount).
- `errors`: a share of the entity's requests fail; each caller on the path fails that share of the
  requests it makes that reach the entity (its success rate drops by at most the entity's failed
  requests over its own), and the entity logs errors in its own log style. Latency likewise reaches
  a caller only on the requests that went through the entity.
- `cpu`: the entity's CPU use shifts to a new level at onset (a hog); its latency rises with it and
  reaches the callers on the path as a latency fault does.
- `memory`: the entity's memory grows linearly from onset (a leak): a trend, not a level shift.
- `pod_failure`: the entity's telemetry stops at onset (rows, spans and logs missing) and the callers on
  the path fail the requests they send it.
- `bad_deploy`: where the dataset carries change records, the entity is rolled out (with healthy
  releases alongside) and its new version fails a share of the requests it serves.
- `overload`: the request rate of a shared downstream resource (an entity with two callers or more)
  multiplies; what exceeds its capacity is throttled (fails) and the rest waits, and every caller of it
  suffers together.

Magnitude, onset and per-sample noise are drawn from `numpy.random.default_rng(seed)`; the ranges are
below with their origin. Nothing here is fitted, and nothing may be tuned on an injected case.

The alert of an injected case is what an alert rule reports: where the dataset's index carries an
alert, the shared rule (`rca.telemetry.recorded.alerting`) applied to the entry service's symptom
metrics against the period before onset, reported as that dataset reports it; elsewhere the loader's
own rule computes it, as for recorded cases. A fault whose effect never trips the rule makes no
incident and no case.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

import networkx as nx
import numpy as np

from rca.evaluation.ground_truth import PATH_SEPARATOR, PATHS_NAME
from rca.telemetry.cases import INDEX_NAME
from rca.telemetry.model import Alert, DependencyGraph, TimeWindow
from rca.telemetry.recorded.alerting import Signal, detect_alert

SPLIT = "synthetic"
INDEX_COLUMNS = (
    "dataset",
    "case_id",
    "system",
    "split",
    "root_cause_service",
    "root_cause_detail",
    "fault_type",
    "inject_time_utc",
    "alert",
    "telemetry",
    "files",
)
# "Every entity, or 30 random ones where there are more" (issue #20).
MAX_ENTITIES = 30


class Kind(StrEnum):
    """Fault kinds the injector knows (the engine's names; `overload` is a downstream resource's)."""

    LATENCY = "latency"
    ERRORS = "errors"
    CPU = "cpu"
    MEMORY = "memory"
    POD_FAILURE = "pod_failure"
    OVERLOAD = "overload"
    BAD_DEPLOY = "bad_deploy"
    NETWORK_DELAY = "network_delay"  # last: each kind's position seeds its draws (`draw`)


# Magnitude ranges, drawn uniformly. Origins:
# - latency, network delay: delays of 100 ms to 1 s (chaos-mesh's and ChaosBlade's documented
#   network-delay examples; PetShop's own `searchdelay` injection is 1000 ms).
# - errors: 10 % to 50 % of requests failing (PetShop's `errorpercent` injections lie in this range).
# - cpu: a hog of 0.5 to 2 cores (stress-ng worker counts of RCD's CPU-hog runs).
# - memory: a leak adding 50 % to 200 % of the entity's normal footprint over the fault window.
# - overload: 3x to 10x the resource's normal request rate (PetShop's DynamoDB request injection).
MAGNITUDES: Mapping[Kind, tuple[float, float]] = MappingProxyType(
    {
        Kind.LATENCY: (0.1, 1.0),  # seconds
        Kind.ERRORS: (0.1, 0.5),  # failing share
        Kind.CPU: (0.5, 2.0),  # cores
        Kind.MEMORY: (0.5, 2.0),  # growth as a share of the normal footprint
        Kind.POD_FAILURE: (1.0, 1.0),  # all of it
        Kind.OVERLOAD: (3.0, 10.0),  # request-rate multiplier
        Kind.BAD_DEPLOY: (0.1, 0.5),  # failing share of the new version's requests (as errors)
        Kind.NETWORK_DELAY: (0.1, 1.0),  # seconds on every packet the entity sends
    }
)
# Per-sample jitter of an injected effect (relative standard deviation): an effect is never a flat
# constant, as no real one is. 10 % is the order of the sample-to-sample spread of the recorded
# latency series.
NOISE = 0.1
# A resource is provisioned for twice its normal peak: beyond that an overload is throttled.
CAPACITY = 2.0
# A CPU hog's effect on the entity's own latency: each extra core of contention adds this share of
# its normal latency (run-queue wait, Little's law at fixed throughput).
CPU_LATENCY_PER_CORE = 1.0
# A memory leak's effect on the entity's own latency: each normal footprint of leaked memory adds this
# share of its normal latency. The collector's work grows with the live set it traces and competes with
# the requests for the same CPU, as a core of contention does (CPU_LATENCY_PER_CORE): a leak that has
# doubled the footprint doubles the latency. It grows with the leak, so the memory leads the latency.
MEMORY_LATENCY_PER_FOOTPRINT = 1.0


@dataclass(frozen=True)
class Fault:
    """One fault to inject."""

    system: str
    kind: Kind
    entity: str
    seed: int
    number: int = 0  # the case's number within its system and kind

    @property
    def case_id(self) -> str:
        """The synthetic case's id."""
        return f"synthetic/{self.system}/{self.kind.value}/{self.number:03d}"


@dataclass(frozen=True)
class Written:
    """A synthetic case written to disk: its index row and its injected path (root first)."""

    row: Mapping[str, str]
    path: tuple[str, ...]


@dataclass(frozen=True)
class Skipped:
    """A fault that makes no case, and why."""

    reason: str


UNREACHABLE = Skipped("no call path from the entry reaches the entity")
NO_ALERT = Skipped("the fault's effect never tripped the alert rule")
# On every signal the rule fires at least as early on the same rows without the fault: the case's
# alert would be the normal period's own, and its ground truth would name a fault that did not cause it.
NOT_ITS_ALERT = Skipped("the rule fires as early on the fault-free rows: the alert is not the fault's")


def caused_by_fault(faulted: Sequence[Signal], clean: Sequence[Signal], window: TimeWindow) -> bool:
    """Whether the fault itself trips the alert rule inside `window`: on some symptom signal the rule
    fires with the fault (`faulted`) and, on the same rows without it (`clean`, in the same order),
    later or never. A fault that only rides on a firing of the normal rows' own makes no case."""
    for with_fault, without in zip(faulted, clean, strict=True):
        fired = rule_alert([with_fault], window)
        if fired is None:
            continue
        anyway = rule_alert([without], window)
        if anyway is None or anyway.fired_at > fired.fired_at:
            return True
    return False


@dataclass
class Draw:
    """The random parts of one injection."""

    rng: np.random.Generator
    magnitude: float

    def jitter(self, n: int) -> np.ndarray:
        """Per-sample multiplicative noise around 1."""
        return np.asarray(1.0 + NOISE * self.rng.standard_normal(n), dtype=np.float64)


def draw(fault: Fault) -> Draw:
    """The seeded random source and magnitude of `fault`."""
    rng = np.random.default_rng([fault.seed, fault.number, list(Kind).index(fault.kind)])
    low, high = MAGNITUDES[fault.kind]
    return Draw(rng, float(rng.uniform(low, high)))


def step_profile(times: np.ndarray, onset: float, step: float) -> np.ndarray:
    """Share of each sample's interval [t, t + step) after `onset` (0 before, 1 after)."""
    return np.asarray(np.clip((times + step - onset) / step, 0.0, 1.0), dtype=np.float64)


def ramp_profile(times: np.ndarray, onset: float, end: float) -> np.ndarray:
    """0 before onset, rising linearly to 1 at `end` (a leak's growth)."""
    span = max(end - onset, 1e-9)
    return np.asarray(np.clip((times - onset) / span, 0.0, 1.0), dtype=np.float64)


def delayed_share(statistic: str, reached: float) -> float:
    """How much of a delay (or failure) that `reached` of the requests meet shows in a statistic named
    `statistic` (`Average`, `p95`, `LatencyP90(s)`, ...): the mean moves by that share of it; a
    percentile pX by all of it once more than (100 - X) % of the requests meet it (the quantile then
    falls among them), else not at all. A statistic of another kind moves by the share."""
    found = re.search(r"p(\d+(?:\.\d+)?)(?![\d.])", statistic.lower())
    if found is None:
        return reached
    return 1.0 if reached > 1.0 - float(found.group(1)) / 100.0 else 0.0


def digraph(graph: DependencyGraph) -> nx.DiGraph:
    """Caller -> callee."""
    g = nx.DiGraph()
    g.add_nodes_from(graph.names())
    g.add_edges_from((e.caller, e.callee) for e in graph.edges)
    return g


def injected_path(g: nx.DiGraph, entity: str, entry: str, rng: np.random.Generator) -> tuple[str, ...] | None:
    """The caller chain the fault travels: a shortest call path entry -> entity, drawn among equals,
    returned root cause first (entity, ..., entry); None when the entry never reaches the entity."""
    if entity == entry:
        return (entry,)
    if entity not in g or entry not in g or not nx.has_path(g, entry, entity):
        return None
    paths = sorted(nx.all_shortest_paths(g, entry, entity))
    chosen = paths[int(rng.integers(len(paths)))]
    return tuple(reversed(chosen))


def shared_resources(g: nx.DiGraph) -> list[str]:
    """Entities with two callers or more: where an overload makes every caller suffer together."""
    return sorted(n for n in g if g.in_degree(n) >= 2)


def utc(t: float) -> str:
    """`YYYY-mm-dd HH:MM:SS` (UTC), as the index writes times."""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


class Injector(Protocol):
    """One system's injector."""

    system: str  # short name used in case ids
    dataset: str  # the loader (the index's `dataset` column)

    def kinds(self) -> tuple[Kind, ...]:
        """The fault kinds this system's telemetry can show."""
        ...

    def entities(self, kind: Kind) -> list[str]:
        """The entities a fault of `kind` can be injected into."""
        ...

    def write(self, fault: Fault, out: Path) -> Written | Skipped:
        """Write the case under `out`, or say why the fault makes no case."""
        ...


@dataclass
class Suite:
    """What `generate` wrote."""

    cases: list[Written] = field(default_factory=list)
    skipped: list[tuple[Fault, Skipped]] = field(default_factory=list)


def plan(injector: Injector, kinds: Iterable[Kind], seed: int, limit: int = MAX_ENTITIES) -> list[Fault]:
    """Faults for every kind the system shows and every entity (a seeded sample of `limit` if more)."""
    faults: list[Fault] = []
    for kind in kinds:
        if kind not in injector.kinds():
            continue
        names = injector.entities(kind)
        if len(names) > limit:
            rng = np.random.default_rng([seed, list(Kind).index(kind)])
            names = sorted(rng.choice(names, size=limit, replace=False).tolist())
        faults.extend(Fault(injector.system, kind, e, seed, i) for i, e in enumerate(names))
    return faults


def generate(
    injectors: Sequence[Injector],
    out: Path,
    seed: int,
    kinds: Iterable[Kind] = tuple(Kind),
    limit: int = MAX_ENTITIES,
    entities: Sequence[str] = (),
    on_case: Callable[[Fault, Written | Skipped], None] | None = None,
) -> Suite:
    """Write a synthetic suite under `out`: case folders, `cases_index.csv`, `propagation_paths.csv`."""
    out.mkdir(parents=True, exist_ok=True)
    suite = Suite()
    wanted = tuple(kinds)
    for injector in injectors:
        for fault in plan(injector, wanted, seed, limit):
            if entities and fault.entity not in entities:
                continue
            written = injector.write(fault, out)
            if isinstance(written, Skipped):
                suite.skipped.append((fault, written))
            else:
                suite.cases.append(written)
            if on_case is not None:
                on_case(fault, written)
    with (out / INDEX_NAME).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=INDEX_COLUMNS)
        writer.writeheader()
        writer.writerows(w.row for w in suite.cases)
    with (out / PATHS_NAME).open("w", newline="") as fh:
        paths = csv.writer(fh)
        paths.writerow(["case_id", "path"])
        paths.writerows([w.row["case_id"], PATH_SEPARATOR.join(w.path)] for w in suite.cases)
    return suite


def index_row(
    dataset: str, fault: Fault, system_name: str, onset: float, alert: str, telemetry: str, files: str
) -> dict[str, str]:
    """The index row of a synthetic case (the public index's columns)."""
    return {
        "dataset": dataset,
        "case_id": fault.case_id,
        "system": system_name,
        "split": SPLIT,
        "root_cause_service": fault.entity,
        "root_cause_detail": "",
        "fault_type": fault.kind.value,
        "inject_time_utc": utc(onset),
        "alert": alert,
        "telemetry": telemetry,
        "files": files,
    }


def rule_alert(signals: Sequence[Signal], window: TimeWindow) -> Alert | None:
    """The shared alert rule on the entry's symptom signals (`rca.telemetry.recorded.alerting`): the
    alert it fires inside `window` (from the onset's sample on), None when it fires nothing there."""
    entity = signals[0].entity if signals else ""
    alert = detect_alert(signals, window, name=f"{entity} synthetic", fallback_entity=entity)
    if alert.labels.get("rule") != "robust_z":
        return None
    return alert
