"""The fault injector: cases in each dataset's own layout, read by the unchanged loaders, with the
injected path as ground truth and an alert that a rule on the entry's symptom reports."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from rca.evaluation.ground_truth import ground_truth
from rca.evaluation.inject import (
    INDEX_COLUMNS,
    MEMORY_LATENCY_PER_FOOTPRINT,
    NO_ALERT,
    NOT_ITS_ALERT,
    Draw,
    Fault,
    Kind,
    Skipped,
    caused_by_fault,
    digraph,
    generate,
    injected_path,
    plan,
    ramp_profile,
    step_profile,
)
from rca.evaluation.injectors import INJECTORS
from rca.evaluation.injectors.nezha import Reached, _Effects
from rca.evaluation.injectors.petshop import _apply, _reached
from rca.telemetry.cases import load_case, parse_alert_hint, read_index
from rca.telemetry.model import DependencyGraph, Direction, Edge, Entity, TimeWindow
from rca.telemetry.recorded.alerting import Signal

REPO = Path(__file__).resolve().parents[3]
DATA = REPO.parent / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "cases_index.csv").is_file(), reason=f"no public data at {DATA}")
# Kinds per system kept small here (a TrainTicket case takes seconds to write); the gate runs them all.
SAMPLE = {
    "changerca": (Kind.BAD_DEPLOY,),
    "petshop": (Kind.LATENCY, Kind.ERRORS, Kind.OVERLOAD),
    "rcd": (Kind.CPU, Kind.MEMORY, Kind.LATENCY),
    "nezha-ob": (Kind.LATENCY, Kind.POD_FAILURE),
    "nezha-tt": (Kind.LATENCY, Kind.CPU),  # its front end records no success rate: errors never alert
}

# One PetShop node's columns: requests, availability and latency statistics.
REQUEST_COLUMNS = (
    ("requests", "Sum"),
    ("availability", "Average"),
    ("latency", "Average"),
    ("latency", "p50"),
    ("latency", "p95"),
)


def _graph(*edges: tuple[str, str]) -> nx.DiGraph:
    names = sorted({n for e in edges for n in e})
    return digraph(DependencyGraph(tuple(Entity(n) for n in names), tuple(Edge(a, b, 1.0) for a, b in edges)))


def test_the_path_is_a_shortest_caller_chain_root_first() -> None:
    g = _graph(("fe", "a"), ("fe", "b"), ("a", "db"), ("b", "db"), ("db", "disk"))
    rng = np.random.default_rng(0)
    assert injected_path(g, "db", "fe", rng) in {("db", "a", "fe"), ("db", "b", "fe")}
    deep = injected_path(g, "disk", "fe", rng)
    assert deep is not None
    assert deep[:2] == ("disk", "db")
    assert deep[-1] == "fe"
    assert len(deep) == 4
    assert injected_path(g, "fe", "fe", rng) == ("fe",)
    assert injected_path(g, "fe", "db", rng) is None  # the entry is never reached from below
    assert injected_path(g, "nowhere", "fe", rng) is None


def test_profiles() -> None:
    t = np.array([0.0, 60.0, 120.0, 180.0])
    assert step_profile(t, 90.0, 60.0).tolist() == [0.0, 0.5, 1.0, 1.0]
    assert ramp_profile(t, 60.0, 180.0).tolist() == [0.0, 0.0, 0.5, 1.0]


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize("system", sorted(SAMPLE))
def test_cases_load_unchanged_with_their_truth(system: str, tmp_path: Path) -> None:
    injector = INJECTORS[system](DATA)
    # A single bad deploy may not trip the alert rule in the few minutes a case records: draw a few.
    suite = generate(
        [injector],
        tmp_path,
        seed=7,
        kinds=SAMPLE[system],
        limit=4 if system.startswith(("changerca", "nezha-tt")) else 1,
    )
    assert suite.cases, "no case written"
    with (tmp_path / "cases_index.csv").open() as fh:
        assert tuple(csv.DictReader(fh).fieldnames or ()) == INDEX_COLUMNS
    refs = {r.case_id: r for r in read_index(tmp_path, split="synthetic")}
    for written in suite.cases:
        ref = refs[written.row["case_id"]]
        case = load_case(tmp_path, ref)  # the dataset's own loader, unchanged
        truth = ground_truth(tmp_path, ref)
        assert truth.path == written.path
        assert truth.path[0] == truth.service
        graph = case.source.topology()
        assert truth.path[-1] in set(graph.names())
        # The alert names the entry's symptom, never the injected entity (unless it is the entry).
        assert case.alert.entity == truth.path[-1]
        hint = parse_alert_hint(ref.alert_hint)
        if hint is None:  # the loader's own rule fired on the case's symptom: a case makes an incident
            assert case.alert.labels.get("rule") == "robust_z"
        if hint is not None:
            onset = datetime.fromisoformat(written.row["inject_time_utc"]).replace(tzinfo=UTC).timestamp()
            assert hint.fired_at >= onset - 1.0
        assert case.source.time_range().contains(case.alert.fired_at)


def test_an_alert_is_the_faults_only_when_the_fault_free_rows_fire_it_later_or_never() -> None:
    times = np.arange(0.0, 600.0, 60.0)
    quiet = np.ones(10)
    step = np.where(times >= 300.0, 5.0, 1.0)
    early = np.where(times >= 120.0, 5.0, 1.0)
    noise = np.linspace(0.9, 1.1, 20)

    def signal(values: np.ndarray) -> Signal:
        return Signal("front", "latency_p99", times, values, noise, Direction.UP)

    scan = TimeWindow(60.0, 600.0)
    assert caused_by_fault([signal(step)], [signal(quiet)], scan)  # the fault-free rows never fire
    assert caused_by_fault([signal(early)], [signal(step)], scan)  # they fire, but later
    assert not caused_by_fault([signal(step)], [signal(step)], scan)  # as early: the rows' own alert
    assert not caused_by_fault([signal(quiet)], [signal(quiet)], scan)  # nothing fires
    # One signal the fault alone trips is enough, whatever another one does without it.
    assert caused_by_fault([signal(step), signal(step)], [signal(step), signal(quiet)], scan)


@needs_data
@pytest.mark.slow
def test_a_fault_without_effect_makes_no_case_even_where_the_normal_rows_trip_the_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Online Boutique's rule scans the 25 minutes after the onset: its normal rows trip it now and then,
    # and a case is drawn on a quiet period, or its rows' own alert is not taken for the fault's.
    monkeypatch.setattr(_Effects, "metrics", lambda self, name, frame: frame)
    suite = generate([INJECTORS["nezha-ob"](DATA)], tmp_path, seed=20, kinds=(Kind.MEMORY,), limit=10)
    assert not suite.cases
    assert {skipped for _, skipped in suite.skipped} <= {NO_ALERT, NOT_ITS_ALERT}


@needs_data
def test_the_same_seed_writes_the_same_suite(tmp_path: Path) -> None:
    injector = INJECTORS["petshop"](DATA)
    one = generate([injector], tmp_path / "a", seed=3, kinds=(Kind.LATENCY,), limit=2)
    two = generate([injector], tmp_path / "b", seed=3, kinds=(Kind.LATENCY,), limit=2)
    other = generate([injector], tmp_path / "c", seed=4, kinds=(Kind.LATENCY,), limit=2)
    assert [w.row for w in one.cases] == [w.row for w in two.cases]
    assert [w.row for w in one.cases] != [w.row for w in other.cases]


@needs_data
def test_a_latency_fault_moves_the_path_and_not_the_callees(tmp_path: Path) -> None:
    injector = INJECTORS["petshop"](DATA)
    entity = "PetSearch_AWS::ECS::Fargate"
    suite = generate([injector], tmp_path, seed=1, kinds=(Kind.LATENCY,), entities=(entity,))
    (written,) = suite.cases
    files = written.row["files"].split(";")[0].strip().replace("{metrics.csv,target.json}", "metrics.csv")
    frame = pd.read_csv(tmp_path / files, header=[0, 1, 2], index_col=0)
    regime = files.split("/")[1]
    normal = pd.read_csv(
        tmp_path / "petshop" / regime / "noissue" / "metrics.csv", header=[0, 1, 2], index_col=0
    )
    g = injector.graphs[regime]

    def rise(node: str) -> float:
        col = (node, "latency", "p50")
        return float(frame[col].iloc[-1] - normal[col].median())

    for node in written.path:
        assert rise(node) > 0.05, node  # at least the smallest injected delay, less noise
    for callee in g.successors(entity):
        if (callee, "latency", "p50") in frame.columns and frame[(callee, "latency", "p50")].notna().all():
            assert abs(rise(callee)) < 0.05, callee


def test_plan_samples_at_most_the_limit() -> None:
    class Many:
        system, dataset = "x", "x"

        def kinds(self) -> tuple[Kind, ...]:
            return (Kind.CPU,)

        def entities(self, kind: Kind) -> list[str]:
            return [f"e{i}" for i in range(50)]

        def write(self, fault: Fault, out: Path) -> Skipped:
            return NO_ALERT

    faults = plan(Many(), [Kind.CPU, Kind.MEMORY], seed=1, limit=30)
    assert len(faults) == 30
    assert len({f.entity for f in faults}) == 30
    assert plan(Many(), [Kind.CPU], seed=1, limit=30) == faults


@needs_data
def test_inject_command(tmp_path: Path) -> None:
    call_command(
        "inject",
        "--data",
        str(DATA),
        "--out",
        str(tmp_path),
        "--system",
        "rcd",
        "--kind",
        "cpu",
        "--limit",
        "2",
        verbosity=0,
    )
    assert len(read_index(tmp_path, split="synthetic")) == 2
    with pytest.raises(CommandError, match="--out"):
        call_command("inject", "--data", str(DATA), "--out", str(DATA))
    with pytest.raises(CommandError, match="--limit"):
        call_command("inject", "--data", str(DATA), "--out", str(tmp_path), "--limit", "0")
    with pytest.raises(CommandError, match="--data"):
        call_command("inject", "--data", str(tmp_path / "none"), "--out", str(tmp_path))


@needs_data
@pytest.mark.slow
def test_a_trainticket_case_has_a_normal_minute_of_its_own(tmp_path: Path) -> None:
    """Its `construct_data/<day>/` minutes, as the recorded days have, drawn apart from its fault
    minutes and read by the loader before the case. (That the fault acts in the case minutes only is
    `test_a_trainticket_delay_acts_once_per_request`'s.)"""
    injector = INJECTORS["nezha-tt"](DATA)
    # The first of a few faults that trips the alert (a fault too small to makes no case).
    suite = generate([injector], tmp_path, seed=5, kinds=(Kind.LATENCY,), limit=6)
    written = suite.cases[0]
    day = written.row["files"].split("/")[2]
    assert f"normal: nezha/construct_data/{day}/" in written.row["files"]
    normal = tmp_path / "nezha" / "construct_data" / day
    case_dir = tmp_path / "nezha" / "rca_data" / day
    trace_files = sorted((normal / "trace").glob("*_trace.csv.gz"))
    log_files = sorted((normal / "log").glob("*_log.csv.gz"))
    # As many normal minutes as the case has, each with its three files.
    assert len(trace_files) == len(log_files) == len(list((case_dir / "trace").glob("*_trace.csv.gz")))
    for trace_file in trace_files:
        assert (normal / "traceid" / trace_file.name.replace("trace", "traceid")).is_file()

    def ids(paths: list[Path]) -> pd.DataFrame:
        return pd.concat(pd.read_csv(p, dtype={"TraceID": str, "SpanID": str}) for p in paths)

    fault_spans = ids(sorted((case_dir / "trace").glob("*_trace.csv.gz")))
    normal_spans = ids(trace_files)
    # Separate draws of the same minute: no copied span (ids tagged per copy and minute) is in both.
    assert not fault_spans.empty
    assert not set(normal_spans["SpanID"]) & set(fault_spans["SpanID"])
    # Every normal minute holds requests through the operation the fault sits in.
    for trace_file in trace_files:
        assert pd.read_csv(trace_file)["PodName"].str.startswith(written.path[0]).any()

    # The loader reads the normal minute (before the case) together with the case's own minutes.
    ref = next(r for r in read_index(tmp_path, split="synthetic") if r.case_id == written.row["case_id"])
    case = load_case(tmp_path, ref)
    before = case.source.spans(TimeWindow(case.window.start - 3600.0, case.window.start))
    assert {s.entity for s in before} >= set(written.path)


@needs_data
@pytest.mark.slow
def test_a_trainticket_delay_acts_once_per_request(tmp_path: Path) -> None:
    """The delay lengthens the entity's entry span (the one its caller called), not again each of its
    own nested spans: a request through it waits one delay, as its metrics say."""
    injector = INJECTORS["nezha-tt"](DATA)
    entity = "ts-station-food-service"  # serves each request through four nested spans of its own
    # A fault too small to trip the alert makes no case: the first seed whose draw does is taken.
    written = next(
        w
        for seed in range(2, 12)
        for w in generate([injector], tmp_path, seed=seed, kinds=(Kind.LATENCY,), entities=(entity,)).cases
    )
    day = written.row["files"].split("/")[2]

    def last_minute(folder: str) -> pd.DataFrame:
        """The entity's spans of the folder's last minute file, `nested` when its parent is its own."""
        last = sorted((tmp_path / "nezha" / folder / day / "trace").glob("*_trace.csv.gz"))[-1]
        frame = pd.read_csv(last, dtype={"SpanID": str, "ParentID": str})
        owner = dict(zip(frame["SpanID"], frame["PodName"].str.rsplit("-", n=2).str[0], strict=True))
        mine = frame[frame["PodName"].str.startswith(entity)]
        nested = mine["ParentID"].map(owner) == entity
        return mine.assign(nested=nested.to_numpy(), seconds=mine["Duration"] / 1e6)

    after = last_minute("rca_data")  # the last case minute lies wholly after onset
    before = last_minute("construct_data")
    rise = after.loc[~after["nested"], "seconds"].max() - before.loc[~before["nested"], "seconds"].max()
    assert rise > 0.09  # the smallest delay (100 ms) less its noise
    assert after.loc[after["nested"], "seconds"].max() < before.loc[before["nested"], "seconds"].max() + 0.09


def test_a_caller_suffers_only_for_the_requests_that_reached_the_fault() -> None:
    """PetShop: a caller fails or waits for the share of its requests that reached the faulty entity
    (each of the entity's requests answers at most one of the caller's); percentiles move only once
    more than their tail share waits."""
    columns = pd.MultiIndex.from_tuples(
        [(node, metric, stat) for node in ("fe", "db") for metric, stat in REQUEST_COLUMNS]
    )
    frame = pd.DataFrame(
        [[500.0, 100.0, 0.1, 0.05, 0.3, 50.0, 100.0, 0.01, 0.01, 0.02]] * 5, columns=columns, dtype=float
    )
    d = Draw(np.random.default_rng(0), 0.4)
    errors = frame.copy()
    _apply(errors, Fault("petshop", Kind.ERRORS, "db", 0), ("db", "fe"), nx.DiGraph(), np.ones(5), d)
    db_failed = 1.0 - errors[("db", "availability", "Average")] / 100.0
    fe_failed = 1.0 - errors[("fe", "availability", "Average")] / 100.0
    assert db_failed.mean() == pytest.approx(0.4, abs=0.05)
    assert fe_failed.mean() == pytest.approx(0.4 * 50 / 500, abs=0.01)  # a tenth of its requests
    latency = frame.copy()
    _apply(latency, Fault("petshop", Kind.LATENCY, "db", 0), ("db", "fe"), nx.DiGraph(), np.ones(5), d)
    rise = (latency - frame).mean()
    assert rise[("db", "latency", "p50")] == pytest.approx(0.4, abs=0.05)
    assert rise[("fe", "latency", "Average")] == pytest.approx(0.04, abs=0.01)
    assert rise[("fe", "latency", "p95")] == pytest.approx(0.4, abs=0.05)  # 10 % wait: the top 5 % do
    assert rise[("fe", "latency", "p50")] == 0.0
    # A count not recorded: every request is taken to reach it, as before.
    assert _reached(frame.drop(columns=[("db", "requests", "Sum")]), "db", "fe") == 1.0
    # An overload: the resource throttles what exceeds its capacity; a caller fails that share only
    # on the tenth of its requests that reach it.
    overload = frame.copy()
    k = Draw(np.random.default_rng(0), 8.0)
    g = nx.DiGraph([("fe", "db"), ("other", "db")])
    _apply(overload, Fault("petshop", Kind.OVERLOAD, "db", 0), ("db", "fe"), g, np.ones(5), k)
    throttled = 1.0 - 2.0 / 8.0
    db_failed = 1.0 - overload[("db", "availability", "Average")] / 100.0
    fe_failed = 1.0 - overload[("fe", "availability", "Average")] / 100.0
    assert db_failed.mean() == pytest.approx(throttled, abs=0.01)
    assert fe_failed.mean() == pytest.approx(throttled * 50 / 500, abs=0.01)
    assert (overload - frame).mean()[("fe", "latency", "p50")] == 0.0  # a tenth waits: not the median


PODS = {"api": "api-service-5d8f-x1", "db": "db-service-7c9a-y2", "cache": "cache-service-1b2c-z3"}


def _trace(rows: list[tuple[str, str, str, str, int, int]]) -> pd.DataFrame:
    """One TrainTicket trace of `PODS`' services: (span, parent, service, operation, start ms, end ms),
    at 10 s into the day."""
    ms = 1_000_000
    return pd.DataFrame(
        {
            "TraceID": "t1",
            "SpanID": [r[0] for r in rows],
            "ParentID": [r[1] for r in rows],
            "PodName": [PODS[r[2]] for r in rows],
            "OperationName": [r[3] for r in rows],
            "StartTimeUnixNano": [10_000 * ms + r[4] * ms for r in rows],
            "EndTimeUnixNano": [10_000 * ms + r[5] * ms for r in rows],
            "Duration": [(r[5] - r[4]) * 1000 for r in rows],
            "entity": [f"{r[2]}-service" for r in rows],
        }
    )


def test_a_trainticket_request_that_fails_logs_once_per_service_and_its_unrun_code_logs_nothing() -> None:
    """An exception in `db` on the path api -> db: the failed request's spans below the failure never
    run, so their log lines vanish (in the entity and in the callee it no longer reaches); `db` logs
    one ERROR line in its own style and `api`, whose two spans the failure passes through, one."""
    pods = PODS
    spans = _trace(
        [  # span, parent, service, operation, start, end (ms): each nested in the one before
            ("A", "root", "api", "GET /order", 0, 100),
            ("B", "A", "api", "HTTP GET", 1, 99),
            ("C", "B", "db", "GET /row", 2, 98),
            ("D", "C", "db", "RowRepository.find", 3, 97),
            ("E", "D", "cache", "GET key", 4, 96),
        ]
    )

    def line(span: str, service: str, statement: str) -> dict[str, object]:
        text = f"08:00:10.000 INFO  x.{statement} TraceID: t1 SpanID: {span} [op][done]\n"
        return {
            "Timestamp": "2100-01-01T08:00:10.000000Z",
            "TimeUnixNano": 10_050_000_000,
            "Node": "n1",
            "PodName": pods[service],
            "Container": "server",
            "TraceID": "t1",
            "SpanID": span,
            "Log": json.dumps({"log": text, "time": "2100-01-01T08:00:10.000000Z"}),
            "entity": f"{service}-service",
        }

    logs = pd.DataFrame(
        [
            line("A", "api", "Api#10"),
            line("C", "db", "Db#20"),
            line("D", "db", "Db#30"),
            line("E", "cache", "C#5"),
        ]
    )
    fault = Fault("nezha-tt", Kind.ERRORS, "db-service", 0)
    effects = _Effects(
        fault, Draw(np.random.default_rng(0), 1.0), ("db-service", "api-service"), pods["db"], 0.0, 0.0, 0.0
    )
    spans_out, logs_out = effects.traces(spans, logs)
    assert set(spans_out["SpanID"]) == {"A", "B", "C"}
    assert "D" not in set(logs_out["SpanID"])
    assert "E" not in set(logs_out["SpanID"])
    errors = logs_out[logs_out["Log"].str.contains(" ERROR ")]
    assert errors.groupby("entity").size().to_dict() == {"api-service": 1, "db-service": 1}
    assert errors.loc[errors["entity"] == "db-service", "Log"].str.contains("x.Db#20").all()  # its style


def test_a_network_delay_widens_the_wire_between_services_and_no_span_of_the_entity() -> None:
    """A network delay on `db`: its answer to api's call and its own call to cache each cross the wire
    0.5 s late. The gap between api's span of the call and db's span of serving it widens by that
    much, and so does the gap between db's span of its call and cache's; cache's span does not move,
    and db's serving span lasts longer only by what it waited on its late call."""
    spans = _trace(
        [  # span, parent, service, operation, start, end (ms)
            ("A", "root", "api", "GET /order", 0, 100),
            ("B", "A", "api", "HTTP GET", 10, 90),
            ("C", "B", "db", "GET /row", 12, 88),
            ("D", "C", "db", "HTTP GET", 20, 60),
            ("E", "D", "cache", "GET key", 22, 58),
        ]
    )
    fault = Fault("nezha-tt", Kind.NETWORK_DELAY, "db-service", 0)
    d = Draw(np.random.default_rng(0), 0.5)
    effects = _Effects(fault, d, ("db-service", "api-service"), PODS["db"], 0.0, 0.5, 0.0)
    out, _ = effects.traces(spans, pd.DataFrame())
    before = spans.set_index("SpanID")["Duration"] / 1e6
    after = out.set_index("SpanID")["Duration"] / 1e6
    gap = lambda f, outer, inner: f[outer] - f[inner]  # noqa: E731
    assert gap(after, "B", "C") - gap(before, "B", "C") == pytest.approx(0.5, rel=0.3)
    assert gap(after, "D", "E") - gap(before, "D", "E") == pytest.approx(0.5, rel=0.3)
    assert after["E"] == before["E"]
    assert after["C"] - before["C"] == pytest.approx(after["D"] - before["D"])  # its wait, no more


def test_a_network_delay_shows_on_the_call_edges_as_their_callers_measure_them() -> None:
    """Online Boutique's per-edge medians: a network delay on db lengthens what each of its callers
    (api on the path, cron off it) waits on it and what db waits on cache (its callee), as each caller
    measures it; db's own side of the edges into it and cache's side of the edge from db do not see
    the wire."""
    frame = pd.DataFrame(
        {"_t": [0.0, 60.0, 120.0], "api_db": 0.01, "db_cache": 0.002, "web_api": 0.02, "cron_db": 0.01}
    )
    fault = Fault("nezha-ob", Kind.NETWORK_DELAY, "db", 0)
    d = Draw(np.random.default_rng(0), 0.5)
    effects = _Effects(fault, d, ("db", "api", "web"), "db-pod", 0.0, 0.5, 0.0)
    caller_side = effects.edges(frame.copy()) - frame
    callee_side = effects.edges(frame.copy(), callee_side=True) - frame
    for col in ("api_db", "db_cache", "web_api", "cron_db"):  # cron: a caller off the path
        assert caller_side[col].iloc[-1] == pytest.approx(0.5, rel=0.3)
    assert (callee_side["api_db"] == 0.0).all()
    assert (callee_side["cron_db"] == 0.0).all()
    assert (callee_side["db_cache"] == 0.0).all()
    assert callee_side["web_api"].iloc[-1] == pytest.approx(0.5, rel=0.3)  # api waits on its side too


def test_a_trainticket_service_shows_what_the_share_of_its_requests_on_the_chain_shows() -> None:
    """A delay or a failure on one caller chain reaches a service's metrics by the share of its
    requests that took that chain: the entry's median does not move when one request in twenty
    waits, its p99 does; its success rate drops by the failing share of that twentieth."""
    times = 1_000.0 + 60.0 * np.arange(5)
    front = pd.DataFrame(
        {
            "_t": times,
            "LatencyP50(s)": 0.05,
            "LatencyP90(s)": 0.1,
            "LatencyP99(s)": 0.3,
            "SuccessRate(%)": 100.0,
        }
    )
    reached = Reached({"api-service": 0.05, "db-service": 0.5})
    path = ("db-service", "api-service")
    slow = _Effects(
        Fault("nezha-tt", Kind.LATENCY, "db-service", 0),
        Draw(np.random.default_rng(0), 0.5),
        path,
        "db-service-7c9a-y2",
        0.0,
        0.5,
        0.0,
        reached,
    )
    out = slow.metrics("front_service.csv.gz", front.copy())
    assert (out["LatencyP50(s)"] == 0.05).all()
    assert (out["LatencyP90(s)"] == 0.1).all()
    assert out["LatencyP99(s)"].mean() == pytest.approx(0.8, abs=0.1)
    failing = _Effects(
        Fault("nezha-tt", Kind.ERRORS, "db-service", 0),
        Draw(np.random.default_rng(0), 0.4),
        path,
        "db-service-7c9a-y2",
        0.0,
        0.0,
        0.0,
        reached,
    )
    out = failing.metrics("front_service.csv.gz", front.copy())
    assert out["SuccessRate(%)"].mean() == pytest.approx(100.0 * (1.0 - 0.4 * 0.05))


def test_a_memory_leak_slows_its_entity_as_it_grows_so_the_memory_leads_the_latency() -> None:
    """The leaked memory grows linearly from onset to the end of the rows; the entity's own latency and
    its callers' rise with it (collection work grows with the live set), from nothing at onset to the
    full `MEMORY_LATENCY_PER_FOOTPRINT` share of the normal latency per footprint at the end."""
    times = 60.0 * np.arange(11)  # onset at 0, the rows end at 600
    pod = pd.DataFrame(
        {
            "_t": times,
            "MemoryUsage(Mi)": 100.0,
            "MemoryUsageRate(%)": 10.0,
            "PodServerLatencyP90(s)": 0.2,
            "PodServerLatencyP95(s)": 0.2,
            "PodServerLatencyP99(s)": 0.2,
        }
    )
    leak = _Effects(
        Fault("nezha-ob", Kind.MEMORY, "cart-service", 0),
        Draw(np.random.default_rng(0), 1.0),
        ("cart-service", "front-service"),
        "cart-service-7c9a-y2",
        0.0,
        MEMORY_LATENCY_PER_FOOTPRINT * 1.0 * 0.2,  # as `_added_latency` draws it: magnitude 1, 0.2 s normal
        0.0,
        leak_end=600.0,
    )
    out = leak.metrics("cart-service-7c9a-y2_metric.csv.gz", pod.copy())
    memory = out["MemoryUsage(Mi)"].to_numpy()
    latency = out["PodServerLatencyP90(s)"].to_numpy()
    assert memory[0] == pytest.approx(100.0)
    assert latency[0] == pytest.approx(0.2)
    assert memory[5] == pytest.approx(150.0, rel=0.35)
    assert latency[5] == pytest.approx(0.3, rel=0.1)
    assert memory[-1] == pytest.approx(200.0, rel=0.35)
    assert latency[-1] == pytest.approx(0.4, rel=0.1)
    assert np.all(np.diff(latency[::5]) > 0)
    with pytest.raises(ValueError, match="leak_end"):
        _Effects(leak.fault, leak.d, leak.path, leak.pod, 0.0, 0.1, 0.0)
