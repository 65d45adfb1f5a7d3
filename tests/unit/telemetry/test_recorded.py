"""Recorded public cases: index reader, loaders, alert rule, span topology and answer isolation.

Data tests run over every `split=dev` case of the index found in ROOTLINE_DATA_DIR (default: the
`shared/data` folder next to the repository) and skip cleanly when that folder is absent.
"""

from __future__ import annotations

import builtins
import dataclasses
import gzip
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rca.evaluation.ground_truth import ground_truth
from rca.telemetry.cases import (
    CaseIndexError,
    CaseRef,
    RecordedCase,
    expand_files,
    load_case,
    parse_alert_hint,
    read_index,
)
from rca.telemetry.model import Direction, Modality, Span, SpanKind, TelemetrySource, TimeWindow
from rca.telemetry.recorded import changerca
from rca.telemetry.recorded.alerting import Signal, detect_alert, first_anomaly
from rca.telemetry.topology import graph_from_spans

REPO_ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = Path(os.environ.get("ROOTLINE_DATA_DIR", REPO_ROOT.parent / "shared" / "data")).resolve()
HAVE_DATA = (DATA_DIR / "cases_index.csv").is_file()
NO_DATA = f"public data not found at {DATA_DIR} (set ROOTLINE_DATA_DIR)"


def _dev_cases() -> list[Any]:
    if not HAVE_DATA:
        return [pytest.param(None, marks=pytest.mark.skip(reason=NO_DATA), id="no-data")]
    return [pytest.param(ref, id=ref.case_id) for ref in read_index(DATA_DIR, split="dev")]


@pytest.fixture
def data_dir() -> Path:
    if not HAVE_DATA:
        pytest.skip(NO_DATA)
    return DATA_DIR


# --- every dev case loads, with consistent entity names ------------------------------------------
@pytest.mark.parametrize("ref", _dev_cases())
def test_dev_case_loads_with_consistent_entities(ref: CaseRef) -> None:
    case = load_case(DATA_DIR, ref)
    source = case.source
    assert isinstance(source, TelemetrySource)
    graph = source.topology()
    topo = set(graph.names())
    assert topo, "empty topology"
    assert all(e.caller in topo and e.callee in topo for e in graph.edges)

    # The alert: on a topology entity, inside what the source holds and inside the case window.
    assert case.alert.entity in topo
    assert source.time_range().contains(case.alert.fired_at)
    assert case.window.contains(case.alert.fired_at) or ref.dataset in ("petshop", "changerca-ob")
    assert case.window.overlaps(source.time_range())

    # Entity names agree across metrics, logs, spans and topology.
    metric_entities = set(source.metric_entities())
    log_entities = set(source.log_entities(case.window))
    span_entities = set(source.span_entities(case.window))
    assert metric_entities, "no metrics"
    assert metric_entities <= topo, metric_entities - topo
    assert log_entities <= topo, log_entities - topo
    assert span_entities <= topo, span_entities - topo
    # Every dataset here has metrics for every topology node.
    assert topo <= metric_entities, topo - metric_entities
    if Modality.LOGS in source.modalities():
        assert log_entities, "log files listed but no log record in the window"
        assert log_entities <= metric_entities
    if Modality.TRACES in source.modalities():
        assert span_entities, "trace files listed but no span in the window"
        assert span_entities <= metric_entities
        assert graph.edges, "trace-derived topology has no edge"

    # A bounded query on the alerting entity answers with data from the case window.
    series = source.metrics(case.alert.entity, case.window)
    assert series
    assert all(len(s) for s in series)
    assert all(case.window.contains(float(t)) for s in series for t in s.timestamps)
    assert all(s.entity == case.alert.entity for s in series)


# --- ChangeRCA: the engine-facing objects hold no field of the answer ----------------------------
ANSWER_KEYS = (
    "fault",
    "fault_release_service",
    "normal_service_list",
    "GIED_result",
    "Microscope_result",
    "Microrca_result",
)


def _strings(obj: Any, seen: set[int] | None = None, depth: int = 0) -> Iterator[str]:
    """Every string reachable from `obj`: reprs, dataclass fields, mappings, attributes, closures, frames."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 12:
        return
    seen.add(id(obj))
    if isinstance(obj, str):
        yield obj
        return
    if isinstance(obj, (np.ndarray, np.generic)):
        if obj.dtype == object:
            yield from (str(v) for v in np.ravel(obj))
        return  # numeric arrays cannot hold a word
    if isinstance(obj, (int, float, bool, type(None), Path)):
        yield str(obj)
        return
    if isinstance(obj, pd.DataFrame):
        yield from (str(c) for c in obj.columns)
        for col in obj.columns:
            if obj[col].dtype == object:
                yield from (str(v) for v in obj[col].unique())
        return
    if not isinstance(obj, (dict, list, tuple, set, frozenset)):
        yield repr(obj)  # containers are walked element by element instead
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k, seen, depth + 1)
            yield from _strings(v, seen, depth + 1)
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            yield from _strings(v, seen, depth + 1)
        return
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _strings(getattr(obj, f.name), seen, depth + 1)
    if callable(obj) and getattr(obj, "__closure__", None):
        for cell in obj.__closure__:
            yield from _strings(cell.cell_contents, seen, depth + 1)
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        yield from _strings(attrs, seen, depth + 1)


def _changerca_refs() -> list[CaseRef]:
    """One ChangeRCA dev case per defect kind (every kind's value gets checked, in bounded time)."""
    if not HAVE_DATA:
        return []
    by_kind: dict[str, CaseRef] = {}
    for ref in read_index(DATA_DIR, split="dev", datasets=["changerca-ob"]):
        by_kind.setdefault(ground_truth(DATA_DIR, ref).fault_type, ref)
    return list(by_kind.values())


def _touch_everything(case: RecordedCase) -> None:
    """Force every lazy part of the case to load, so the walk sees it all."""
    src = case.source
    src.topology()
    for entity in src.metric_entities():
        src.metrics(entity, src.time_range())
    src.events(TimeWindow(0.0, 4e9))


def test_changerca_engine_objects_hold_no_answer(data_dir: Path) -> None:
    refs = _changerca_refs()
    assert refs, "no ChangeRCA dev case in the index"
    for ref in refs:
        truth = ground_truth(data_dir, ref)
        case = load_case(data_dir, ref)
        _touch_everything(case)
        strings = list(_strings(case))
        joined = "\n".join(strings)
        for key in ANSWER_KEYS[1:]:
            assert key not in joined, f"{ref.case_id}: {key} reachable"
        assert not any(s == "fault" or "'fault'" in s for s in strings), (
            f"{ref.case_id}: key `fault` reachable"
        )
        # The defect kind (e.g. "exception", "wrongsql") appears nowhere as a value or a word.
        kind = truth.fault_type
        assert kind not in strings, f"{ref.case_id}: defect kind {kind!r} reachable as a value"
        for event in case.source.events(TimeWindow(0.0, 4e9)):
            text = " ".join([event.message, event.reference or "", *event.attributes.values()])
            assert not re.search(rf"\b{re.escape(kind)}\b", text, re.IGNORECASE), (ref.case_id, text)
        words = set(re.findall(r"[a-z]+", joined.lower()))
        assert kind.lower() not in words, f"{ref.case_id}: defect kind {kind!r} reachable as a word"
        # Every release of the plan is an event; nothing marks one of them out.
        services = {e.entity for e in case.source.events(TimeWindow(0.0, 4e9))}
        assert truth.service in services
        per_service = {
            s: sorted(e.attributes.get("phase", "") for e in case.source.events(TimeWindow(0.0, 4e9), s))
            for s in services
        }
        assert all(p and p[-1] == "step" for p in per_service.values())


def test_changerca_loader_never_opens_baseline_files(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open, real_gzip_open, real_read_csv = builtins.open, gzip.open, pd.read_csv

    def rec_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def rec_gzip(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_gzip_open(file, *args, **kwargs)

    def rec_read_csv(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_read_csv(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", rec_open)
    monkeypatch.setattr(gzip, "open", rec_gzip)
    monkeypatch.setattr(pd, "read_csv", rec_read_csv)
    changerca._read_table.cache_clear()
    changerca._read_dependency.cache_clear()
    for ref in _changerca_refs():
        _touch_everything(load_case(data_dir, ref))
    case_files = [p for p in opened if "changerca-ob" in p]
    assert any(p.endswith(".json") for p in case_files)
    assert any(p.endswith("dependency.csv.gz") for p in case_files)
    bad = [p for p in case_files if re.search(r"/(gied|microrca|microscope)(/|\.json$)", p)]
    assert not bad, bad


def test_case_ref_has_no_truth_fields() -> None:
    names = {f.name for f in dataclasses.fields(CaseRef)}
    assert names.isdisjoint({"root_cause_service", "root_cause_detail", "fault_type", "inject_time_utc"})


def test_ground_truth_reads_the_truth_columns(data_dir: Path) -> None:
    ref = read_index(data_dir, split="dev", datasets=["rcd-sockshop"])[0]
    truth = ground_truth(data_dir, ref)
    assert truth.service
    assert truth.fault_type
    assert truth.service in ref.case_id  # RCD case ids name the faulty service


# --- the source answers bounded queries lazily (Nezha TrainTicket) -------------------------------
def test_nezha_tt_logs_and_spans_are_bounded(data_dir: Path) -> None:
    refs = [r for r in read_index(data_dir, split="dev", datasets=["nezha"]) if r.system == "TrainTicket"]
    case = load_case(data_dir, refs[0])
    src = case.source
    assert src.conventions.statement_id is not None  # its services write logback statement ids
    minute = TimeWindow(case.window.start, case.window.start + 60)
    spans = src.spans(minute)
    assert spans
    assert all(minute.contains(s.start) for s in spans)
    assert {s.kind for s in spans} >= {SpanKind.SERVER, SpanKind.CLIENT}
    entity = spans[0].entity
    own = src.spans(minute, entity)
    assert {s.trace_id for s in own} <= {s.trace_id for s in spans}
    busiest = max(src.log_entities(case.window), key=lambda e: len(src.logs(e, case.window)))
    logs = src.logs(busiest, case.window, limit=50)
    assert 0 < len(logs) <= 50
    assert all(r.entity == busiest for r in logs)
    assert all(case.window.contains(r.time) for r in logs)
    assert all(r.trace_id and re.fullmatch(r"[0-9a-f]{32}", r.trace_id) for r in logs)
    assert not any(r.body.startswith("{") for r in logs)  # the JSON wrapper is removed
    warn = src.logs(busiest, case.window, pattern=r"\bWARN\b")
    assert all("WARN" in r.body for r in warn)
    # Nothing before the first case minute is held in logs/traces (apart from a normal minute).
    assert src.spans(TimeWindow(case.window.start - 3600, case.window.start - 1800)) == []


def test_nezha_log_rows_with_an_overflowed_nanosecond_clock_keep_their_timestamp() -> None:
    from rca.telemetry.recorded.nezha import _log_times

    raw = pd.DataFrame(
        {
            "Timestamp": ["2023-01-29T09:20:29.295", "2023-01-29T09:20:30.000000001Z", "not a time"],
            "TimeUnixNano": [-6795364578871345152, 1674984030000000001, -1],
        }
    )
    times = _log_times(raw)
    assert times[0] == pytest.approx(pd.Timestamp("2023-01-29T09:20:29.295Z").timestamp())
    assert times[1] == pytest.approx(1674984030.0)
    assert np.isnan(times[2])  # neither clock reads: the row is dropped by the loader


def test_nezha_dev_logs_hold_no_time_outside_their_day(data_dir: Path) -> None:
    refs = [r for r in read_index(data_dir, split="dev", datasets=["nezha"]) if r.system == "TrainTicket"]
    ref = next(r for r in refs if r.case_id.endswith("/05"))  # its first minute has overflowed rows
    case = load_case(data_dir, ref)
    day = TimeWindow(case.window.start - 86_400, case.window.end + 86_400)
    frame = case.source.log_loader(case.window) if case.source.log_loader else pd.DataFrame()
    assert len(frame) > 0
    assert frame["time"].between(day.start, day.end).all()


# --- graph_from_spans ------------------------------------------------------------------------
def _span(sid: str, parent: str | None, entity: str, trace: str = "t1") -> Span:
    return Span(
        trace_id=trace, span_id=sid, parent_span_id=parent, entity=entity, name="op", start=0.0, end=1.0
    )


def test_graph_from_spans_counts_cross_service_calls() -> None:
    spans = [
        _span("a", None, "gateway"),
        _span("b", "a", "gateway"),  # same service: no edge
        _span("c", "b", "orders"),
        _span("d", "c", "db"),
        _span("e", "b", "orders"),
        _span("f", "zz", "lonely"),  # parent not among the spans: node, no edge
        _span("g", None, "gateway", trace="t2"),
        _span("h", "g", "orders", trace="t2"),
    ]
    g = graph_from_spans(spans, extra_entities=["metrics-only"])
    assert set(g.names()) == {"gateway", "orders", "db", "lonely", "metrics-only"}
    weights = {(e.caller, e.callee): e.weight for e in g.edges}
    assert weights == {("gateway", "orders"): 3.0, ("orders", "db"): 1.0}
    assert g.callees("gateway") == ["orders"]
    assert g.callers("db") == ["orders"]


def test_graph_from_spans_empty() -> None:
    g = graph_from_spans([])
    assert g.entities == ()
    assert g.edges == ()


# --- the alert rule on synthetic series ---------------------------------------------------------
def test_first_anomaly_fires_at_the_spike() -> None:
    rng = np.random.default_rng(7)
    baseline = 0.2 + rng.normal(0, 0.01, 60)
    ts = np.arange(10, dtype=np.float64) * 60.0
    values = 0.2 + rng.normal(0, 0.01, 10)
    values[6:] = 0.6
    assert first_anomaly(ts, values, baseline)[0] == 360.0  # type: ignore[index]
    assert first_anomaly(ts, values, baseline, persist=3)[0] == 480.0  # type: ignore[index]
    assert first_anomaly(ts, values, baseline, direction=Direction.DOWN) is None
    assert first_anomaly(ts, values, np.array([0.2, np.nan])) is None  # too little baseline


def test_first_anomaly_ignores_noise_on_a_flat_baseline() -> None:
    baseline = np.full(30, 100.0)  # MAD = 0: the relative floor keeps jitter quiet
    ts = np.arange(5, dtype=np.float64)
    assert (
        first_anomaly(ts, np.array([100.0, 99.5, 100.2, 99.9, 100.0]), baseline, direction=Direction.DOWN)
        is None
    )
    hit = first_anomaly(ts, np.array([100.0, 99.5, 80.0, 70.0, 100.0]), baseline, direction=Direction.DOWN)
    assert hit is not None
    assert hit[0] == 2.0


def test_detect_alert_earliest_signal_then_fallbacks() -> None:
    ts = np.arange(6, dtype=np.float64)
    base = np.array([1.0, 1.1, 0.9, 1.0, 1.05, 0.95])
    late = Signal("fe", "latency_p99", ts, np.array([1, 1, 1, 1, 9, 9.0]), base, Direction.UP)
    early = Signal("fe", "latency_p50", ts, np.array([1, 1, 5, 5, 5, 5.0]), base, Direction.UP)
    window = TimeWindow(0.0, 6.0)
    alert = detect_alert([late, early], window, name="x", fallback_entity="fe")
    assert (alert.fired_at, alert.metric, alert.labels["rule"]) == (2.0, "latency_p50", "robust_z")
    weak = Signal("fe", "latency_p50", ts, np.array([1, 1.1, 1.2, 1.1, 1.0, 1.0]), base, Direction.UP)
    alert = detect_alert([weak], window, name="x", fallback_entity="fe")
    assert alert.labels["rule"] == "max_deviation"
    assert alert.fired_at == 2.0
    assert alert.severity == "warning"
    blind = Signal("fe", "cpu", ts, np.ones(6), np.array([]), Direction.BOTH)
    alert = detect_alert([blind], window, name="x", fallback_entity="fe")
    assert alert.labels["rule"] == "window_start"
    assert alert.fired_at == 0.0
    assert alert.entity == "fe"


# --- index reader ----------------------------------------------------------------------------
HEADER = (
    "dataset,case_id,system,split,root_cause_service,root_cause_detail,fault_type,inject_time_utc,"
    "alert,telemetry,files\n"
)


def test_read_index_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CaseIndexError, match=r"cases_index\.csv: case index not found"):
        read_index(tmp_path)


def test_read_index_missing_column_is_named(tmp_path: Path) -> None:
    (tmp_path / "cases_index.csv").write_text("dataset,case_id,system,split,alert,telemetry\nx,y,z,dev,,\n")
    with pytest.raises(CaseIndexError, match=r"cases_index\.csv: missing column\(s\) files"):
        read_index(tmp_path)


def test_read_index_empty_value_is_named(tmp_path: Path) -> None:
    (tmp_path / "cases_index.csv").write_text(HEADER + "rcd-sockshop,,Sock Shop,dev,carts,,cpu_hog,,,m,f\n")
    with pytest.raises(CaseIndexError, match=r"line 2: empty value in column case_id"):
        read_index(tmp_path)


def test_read_index_duplicate_and_garbage(tmp_path: Path) -> None:
    row = "rcd-sockshop,rcd/a/1,Sock Shop,dev,carts,,cpu_hog,,,m,f\n"
    (tmp_path / "cases_index.csv").write_text(HEADER + row + row)
    with pytest.raises(CaseIndexError, match=r"line 3: duplicate case_id rcd/a/1"):
        read_index(tmp_path)
    (tmp_path / "bad.csv").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CaseIndexError, match=r"bad\.csv"):
        read_index(tmp_path, index=tmp_path / "bad.csv")


def test_read_index_filters_and_parses(tmp_path: Path) -> None:
    (tmp_path / "cases_index.csv").write_text(
        HEADER
        + 'rcd-sockshop,rcd/a/1,Sock Shop,dev,carts,,cpu_hog,,,m,"rcd/{normal.csv,anomalous.csv}"\n'
        + 'changerca-ob,changerca/x,OB,holdout,svc,detail,exception,,"detected 2023-09-22 15:59:00",m,c/x/\n'
    )
    assert [r.case_id for r in read_index(tmp_path, split="dev")] == ["rcd/a/1"]
    assert [r.case_id for r in read_index(tmp_path, datasets=["changerca-ob"])] == ["changerca/x"]
    ref = read_index(tmp_path, split="holdout")[0]
    assert ref.alert_hint == "detected 2023-09-22 15:59:00"
    assert ref.files == ("c/x/",)
    assert "exception" not in repr(ref)
    assert "svc" not in repr(ref.files)
    with pytest.raises(ValueError, match="unknown dataset"):
        load_case(tmp_path, dataclasses.replace(ref, dataset="nope"))


def test_expand_files_and_alert_hints() -> None:
    assert expand_files("d/{log,trace}/{08_43,08_44}_x") == [
        "d/log/08_43_x",
        "d/log/08_44_x",
        "d/trace/08_43_x",
        "d/trace/08_44_x",
    ]
    hint = parse_alert_hint("PetSite:latency@2023-04-13 01:49:08")
    assert hint is not None
    assert (hint.entity, hint.metric, hint.fired_at) == ("PetSite", "latency", 1681350548.0)
    hint = parse_alert_hint("detected 2023-09-22 15:59:00")
    assert hint is not None
    assert hint.entity is None
    assert hint.fired_at == 1695398340.0
    assert parse_alert_hint("") is None
    with pytest.raises(ValueError, match="without a time"):
        parse_alert_hint("PetSite:latency")


def test_a_dependency_graph_round_trips_through_json() -> None:
    import json

    from rca.telemetry.model import DependencyGraph, Edge, Entity

    graph = DependencyGraph(
        entities=(Entity("checkout", "shop"), Entity("orders-db", None, "database")),
        edges=(Edge("checkout", "orders-db", 42.0),),
    )
    assert DependencyGraph.from_dict(json.loads(json.dumps(graph.to_dict()))) == graph
    assert DependencyGraph.from_dict({}) == DependencyGraph(entities=(), edges=())
