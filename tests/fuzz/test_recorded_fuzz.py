"""Dataset loaders reading damaged files: a result, or a `CaseFileError` naming the file.

RCD and PetShop: a small dev case is copied into a temp folder (its files cut to a few dozen rows).
Nezha (TrainTicket and Online Boutique) and ChangeRCA: a tiny synthetic case with the real layout is
written into a temp folder (no dataset file is copied, no ground truth is written). Each example
damages one file (truncated, bytes replaced, a cell or the JSON replaced by junk, a JSON record
mutated; a gzip file either in its compressed stream or in the text inside) and the case is loaded
and queried in full: metrics, topology, logs, spans and change events. The loaders cache parsed files
by path, so every example starts with cold caches: otherwise a damaged file would be served from
the cache of an earlier example and never parsed.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rca.telemetry.cases import CaseFileError, RecordedCase, case_files, find_case, load_case
from rca.telemetry.recorded import changerca, nezha, petshop, rcd
from tests.fuzz.conftest import FUZZ, JSON, NASTY_TEXT, mutate

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
CASES = {
    "rcd-sockshop": "rcd/carts-cpu/1",
    "petshop": "petshop/low_traffic/train/issue_0",
}
ROWS = 40  # enough rows for the alert rule to run, few enough to rewrite per example
# The index columns a loader reads (the ground-truth columns are not written for synthetic cases).
INDEX_COLUMNS = ("dataset", "case_id", "system", "split", "alert", "telemetry", "files")


def clear_loader_caches() -> None:
    """Forget every parsed file (the loaders cache by path, and a damaged file keeps its path)."""
    for cached in (
        rcd._read,
        petshop._read_metrics,
        petshop._read_graph,
        nezha._read_metric_table,
        nezha._read_logs,
        nezha._read_spans,
        nezha._metric_layout,
        changerca._read_table,
        changerca._read_dependency,
    ):
        cached.cache_clear()


@pytest.fixture(scope="module")
def small_cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[Path]]]:
    """dataset -> (its small data folder, the files its case reads)."""
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    made = {}
    for dataset, case_id in CASES.items():
        root = tmp_path_factory.mktemp(dataset)
        ref = find_case(DATA, dataset, case_id)
        header = (DATA / "cases_index.csv").read_text().splitlines()[0]
        row = next(
            line for line in (DATA / "cases_index.csv").read_text().splitlines() if f",{case_id}," in line
        )
        (root / "cases_index.csv").write_text(f"{header}\n{row}\n")
        files = []
        for rel in case_files(ref):
            source = DATA / rel
            if not source.is_file():
                continue
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            lines = source.read_bytes().splitlines(keepends=True)
            target.write_bytes(b"".join(lines[: ROWS + 4]))
            files.append(target)
        made[dataset] = (root, files)
    return made


# --- tiny synthetic cases in the layouts of Nezha and ChangeRCA ----------------------------------
def _csv(rows: Sequence[Sequence[object]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _put(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode(), mtime=0) if rel.endswith(".gz") else text.encode())
    return path


def _index(root: Path, dataset: str, case_id: str, system: str, alert: str, files: str) -> None:
    row = [dataset, case_id, system, "dev", alert, "synthetic", files]
    (root / "cases_index.csv").write_text(_csv([list(INDEX_COLUMNS), row]))


def _go_time(t: datetime, since: float) -> str:
    """A Go `time.Time` string as the Nezha / ChangeRCA collectors print it."""
    return f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond:06d}357 +0000 UTC m=+{since:.9f}"


def _metric_rows(start: datetime, n: int, header: list[str], row: Callable[[int], list[object]]) -> str:
    """`n` one-minute rows: Go time, unix seconds, then `row(i)`."""
    lines: list[Sequence[object]] = [header]
    for i in range(n):
        t = start + timedelta(minutes=i)
        lines.append([_go_time(t, 60.0 * i), int(t.timestamp()), *row(i)])
    return _csv(lines)


POD_HEADER = ["Time", "TimeStamp", "PodName", *nezha.POD_METRICS]
FRONT_HEADER = ["Time", "TimeStamp", "ServiceName", *nezha.FRONT_METRICS]


def _nezha_metrics(
    root: Path, day: str, start: datetime, n: int, pods: list[str], spike: range
) -> list[Path]:
    """front_service and per-pod metric files of a Nezha day; the front end is slow during `spike`."""
    base = f"nezha/rca_data/{day}/metric"
    files = [
        _put(
            root,
            f"{base}/front_service.csv.gz",
            _metric_rows(
                start,
                n,
                FRONT_HEADER,
                lambda i: [
                    "Frontend",
                    100 - 40 * (i in spike),
                    0.05 + i % 3 / 100,
                    0.1,
                    0.2,
                    0.4 + 2 * (i in spike),
                ],
            ),
        )
    ]
    for k, pod in enumerate(pods):

        def row(i: int, k: int = k, pod: str = pod) -> list[object]:
            return [pod, *(float(j + k + i % 5) for j in range(len(nezha.POD_METRICS)))]

        files.append(_put(root, f"{base}/{pod}_metric.csv.gz", _metric_rows(start, n, POD_HEADER, row)))
    return files


def _nezha_minute(root: Path, folder: str, day: str, hh: int, mm: int, pods: list[str]) -> list[Path]:
    """The log and trace files of minute HH:MM (rows inside the minute before it, 09 s tick)."""
    end = datetime.fromisoformat(f"{day} {hh:02d}:{mm:02d}:09").replace(tzinfo=UTC)
    logs: list[list[object]] = [
        ["Timestamp", "TimeUnixNano", "Node", "PodName", "Container", "TraceID", "SpanID", "Log"]
    ]
    spans: list[list[object]] = [
        [
            "TraceID",
            "SpanID",
            "ParentID",
            "PodName",
            "OperationName",
            "StartTimeUnixNano",
            "EndTimeUnixNano",
            "Duration",
        ]
    ]
    for i in range(3):
        t = end - timedelta(seconds=50 - 10 * i)
        ns = int(t.timestamp()) * 10**9 + 123_456_789
        trace = f"{hh:02d}{mm:02d}{i:028x}"
        gateway, callee = pods[0], pods[1 + i % (len(pods) - 1)]
        ids = [f"{hh:02d}{mm:02d}{i:02d}{j:010x}" for j in range(3)]
        spans += [
            [trace, ids[0], "root", gateway, "/*", ns, ns + 9_000_000, 9000],
            [trace, ids[1], ids[0], gateway, "FilteringWebHandler.handle", ns + 10_000, ns + 8_000_000, 7990],
            [trace, ids[2], ids[1], callee, "POST /api/v1/call", ns + 20_000, ns + 7_000_000, 6980],
        ]
        level = "ERROR" if i == 2 else "INFO"
        line = f"{t:%H:%M:%S}.382 {level}  c.s.Impl#12 TraceID: {trace} SpanID: {ids[2]} [call][done {i}]\n"
        body = json.dumps({"log": line, "stream": "stdout", "time": f"{t:%Y-%m-%dT%H:%M:%S}.38Z"})
        logs.append([f"{t:%Y-%m-%dT%H:%M:%S}.38Z", ns, "10.0.0.7", callee, "server", trace, ids[2], body])
    return [
        _put(root, f"{folder}/log/{hh:02d}_{mm:02d}_log.csv.gz", _csv(logs)),
        _put(root, f"{folder}/trace/{hh:02d}_{mm:02d}_trace.csv.gz", _csv(spans)),
    ]


def _nezha_tt(root: Path) -> tuple[str, list[Path]]:
    """A TrainTicket day: 60 metric minutes, a case of minutes 08_43 and 08_44, one normal minute."""
    day, pods = "2023-01-29", ["ts-gateway-service-6f6cfc45b-h5m2n", "ts-contacts-service-866bd68c97-xcqfx"]
    start = datetime.fromisoformat(f"{day} 08:00:09.043").replace(tzinfo=UTC)
    files = _nezha_metrics(root, day, start, 60, pods, range(42, 45))
    for mm in (43, 44):
        files += _nezha_minute(root, f"nezha/rca_data/{day}", day, 8, mm, pods)
    files += _nezha_minute(root, f"nezha/construct_data/{day}", day, 8, 50, pods)
    case_id = f"nezha/{day}/fuzz"
    _index(
        root,
        "nezha",
        case_id,
        "TrainTicket",
        "",
        f"nezha/rca_data/{day}/metric/*; "
        f"nezha/rca_data/{day}/{{log,trace,traceid}}/{{08_43,08_44}}_*.csv.gz; "
        f"normal: nezha/construct_data/{day}/",
    )
    return case_id, files


def _nezha_ob(root: Path) -> tuple[str, list[Path]]:
    """An Online Boutique day (metrics only): pod files, front end, dependency and edge latencies."""
    day, pods = "2022-08-22", ["frontend-579b9bff58-t2dbm", "cartservice-579f59597d-wc2lz"]
    start = datetime.fromisoformat(f"{day} 03:51:19.573").replace(tzinfo=UTC)
    files = _nezha_metrics(root, day, start, ROWS, pods, range(25, 30))
    base = f"nezha/rca_data/{day}/metric"
    deps: list[list[object]] = [
        ["Source", "Target", "Weight"],
        ["frontend", "cartservice", 1],
        ["frontend", "10.0.0.7", 1],
    ]
    files.append(_put(root, f"{base}/dependency.csv.gz", _csv(deps)))
    edges = ["frontend_cartservice", "checkoutservice_cartservice"]
    for name in ("source_50", "destination_50"):
        text = _metric_rows(start, ROWS, ["time", "timestamp", *edges], lambda i: [0.004 + i / 1e4, 0.003])
        files.append(_put(root, f"{base}/{name}.csv.gz", text))
    case_id = f"nezha/{day}/fuzz"
    _index(root, "nezha", case_id, "OnlineBoutique", "", f"nezha/rca_data/{day}/metric/*")
    return case_id, files


def _changerca(root: Path) -> tuple[str, list[Path]]:
    """A ChangeRCA case folder: experiment record (no answer keys), pod-edge files, service tables."""
    name = "2023-09-22_9"
    folder = f"changerca-ob/2023-09-22/{name}"
    start = datetime.fromisoformat("2023-09-22 15:39:01.962").replace(tzinfo=UTC)
    t0 = int(start.timestamp())
    old, new = "adservice-v1-59dcc9f97-2k8gb", "adservice-v2-fd6989b7c-6xff2"
    cart = "cartservice-v1-685f9dd56f-b9ffz"
    step = {
        "v1": 0,
        "v2": 1,
        "release_pod": [new],
        "delete_pod": [old],
        "release_complete_timestamp": t0 + 900,
    }
    record = {
        "plan": {
            "adservice": {"release_time": t0 + 600, "target_replica": 1, "process": {str(t0 + 600): step}},
            "cartservice": {"release_time": t0 + 700, "target_replica": 1, "process": {}},
        },
        "before_change_list": [old, cart],
        "experiment_time": f"{start:%Y-%m-%d %H:%M:%S}",
        "experiemnt_end_time": f"{start + timedelta(minutes=ROWS):%Y-%m-%d %H:%M:%S}",
        "detect_time": f"{start + timedelta(minutes=20):%Y-%m-%d %H:%M:%S}",
        "detect_timestamp": t0 + 1200,
    }
    files = [_put(root, f"{folder}/{name}.json", json.dumps(record, indent=1))]
    pod_header = ["Time", "Timestamp", *changerca.EDGE_METRICS, *changerca.POD_METRICS]
    for pod, edge, first in (
        (old, "frontend_adservice", 0),
        (new, "frontend_adservice", 15),
        (cart, "frontend_cartservice", 0),
    ):
        text = _metric_rows(
            start + timedelta(minutes=first),
            ROWS - first,
            pod_header,
            lambda i: [100 - i % 2, 4.7 + i, 42.3, 3.4, 16.7, 0.0046],
        )
        files.append(_put(root, f"{folder}/{pod}_{edge}.csv.gz", text))
    edges = ["frontend_adservice", "frontend_cartservice"]
    for table in ("source_success", "destination_success"):
        text = _metric_rows(start, ROWS, ["time", "timestamp", *edges], lambda i: [100.0, 100.0 - (i > 20)])
        files.append(_put(root, f"{folder}/{table}.csv.gz", text))
    deps: list[list[object]] = [
        ["Source", "Target", "Weight"],
        ["frontend", "adservice", 1],
        ["frontend", "cartservice", 1],
        ["adservice", "10.0.0.9", 1],
    ]
    files.append(_put(root, f"{folder}/dependency.csv.gz", _csv(deps)))
    case_id = f"changerca/{name}"
    # No `alert` in the index (the real rows have one): the record's detect_timestamp is read, and fuzzed.
    _index(root, "changerca-ob", case_id, "OnlineBoutique", "", f"{folder}/")
    return case_id, files


SYNTHETIC: dict[str, tuple[str, Callable[[Path], tuple[str, list[Path]]]]] = {
    "nezha-tt": ("nezha", _nezha_tt),
    "nezha-ob": ("nezha", _nezha_ob),
    "changerca-ob": ("changerca-ob", _changerca),
}


@pytest.fixture(scope="module")
def synthetic_cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str, list[Path]]]:
    """name -> (its data folder, its case id, the files its case reads)."""
    made = {}
    for name, (_, write) in SYNTHETIC.items():
        root = tmp_path_factory.mktemp(name)
        case_id, files = write(root)
        made[name] = (root, case_id, files)
    return made


# --- damage and the property ----------------------------------------------------------------------
def damage(data: st.DataObject, original: bytes, is_json: bool, hows: tuple[str, ...] = ()) -> bytes:
    how = data.draw(st.sampled_from(hows or ("truncate", "bytes", "cell", "json", "empty")))
    if how == "truncate":
        return original[: data.draw(st.integers(0, max(0, len(original) - 1)))]
    if how == "bytes":
        at = data.draw(st.integers(0, max(0, len(original) - 1)))
        return original[:at] + data.draw(st.binary(min_size=1, max_size=8)) + original[at + 8 :]
    if how == "json" or is_json:
        return json.dumps(data.draw(JSON)).encode()
    if how == "cell":
        lines = original.decode(errors="replace").splitlines()
        line = data.draw(st.integers(0, len(lines) - 1))
        cells = lines[line].split(",")
        cells[data.draw(st.integers(0, len(cells) - 1))] = data.draw(
            NASTY_TEXT | st.sampled_from(["", "nan", "inf", "-1e309", "1e400", '"', "a,b"])
        ).replace("\x00", "")
        lines[line] = ",".join(cells)
        return "\n".join(lines).encode(errors="surrogatepass")
    return b""


def damage_file(data: st.DataObject, victim: Path, original: bytes) -> bytes:
    """Damaged bytes for `victim`: gzip damaged outside or inside, a JSON record mutated or replaced."""
    if victim.name.endswith(".gz"):
        if data.draw(st.booleans()):  # the compressed stream: a cut download, flipped bytes
            return damage(data, original, False, ("truncate", "bytes", "empty"))
        inner = damage(data, gzip.decompress(original), False)  # well-formed gzip, damaged text
        return gzip.compress(inner, mtime=0)
    if victim.suffix == ".json" and data.draw(st.booleans()):
        return json.dumps(mutate(data, json.loads(original))).encode()
    return damage(data, original, victim.suffix == ".json")


def load_and_query(root: Path, dataset: str, case_id: str) -> RecordedCase:
    """Load the case and run every query the engine can make, over the whole recorded range."""
    clear_loader_caches()
    ref = find_case(root, dataset, case_id)
    case = load_case(root, ref)
    source = case.source
    every = source.time_range()
    source.topology()
    source.baseline_window(case.alert.fired_at)
    for entity in source.metric_entities():
        source.metrics(entity, case.window)
        source.metrics(entity, every)
    for entity in source.log_entities(every):
        source.logs(entity, every, pattern="ERROR")
    for entity in source.span_entities(every):
        source.spans(every, entity)
    source.spans(case.window)
    source.events(every)
    return case


def check_damaged(root: Path, dataset: str, case_id: str, victim: Path, damaged: bytes) -> None:
    """Load the case with `victim` holding `damaged`: it loads, or a CaseFileError names the victim."""
    original = victim.read_bytes()
    victim.write_bytes(damaged)
    try:
        case = load_and_query(root, dataset, case_id)
    except CaseFileError as exc:
        failure: CaseFileError | None = exc
    else:
        failure = None
        # A case that loads is usable: its window and its alert time are real times.
        assert math.isfinite(case.window.start), case.window
        assert math.isfinite(case.window.end), case.window
        assert math.isfinite(case.alert.fired_at), case.alert
    finally:
        victim.write_bytes(original)
        clear_loader_caches()
    if failure is not None:
        assert victim.name in str(failure), f"{type(failure).__name__}: {failure}"
        assert damaged != original, f"the undamaged case failed: {failure}"


@pytest.mark.parametrize("dataset", sorted(CASES))
@FUZZ
@given(data=st.data())
def test_damaged_case_files(
    small_cases: dict[str, tuple[Path, list[Path]]], dataset: str, data: st.DataObject
) -> None:
    root, files = small_cases[dataset]
    victim = data.draw(st.sampled_from(files))
    check_damaged(root, dataset, CASES[dataset], victim, damage_file(data, victim, victim.read_bytes()))


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_cases_load_undamaged(
    synthetic_cases: dict[str, tuple[Path, str, list[Path]]], name: str
) -> None:
    """The synthetic cases are realistic enough to load and to answer every kind of query."""
    root, case_id, _ = synthetic_cases[name]
    case = load_and_query(root, SYNTHETIC[name][0], case_id)
    source, every = case.source, case.source.time_range()
    assert math.isfinite(case.window.start)
    assert case.window.end > case.window.start
    assert case.window.contains(case.alert.fired_at) or name == "changerca-ob"
    assert all(source.metrics(e, every) for e in source.metric_entities())
    assert source.topology().edges
    if name == "nezha-tt":
        assert source.log_entities(every)
        assert source.span_entities(every)
        assert source.logs(source.log_entities(every)[0], every, pattern="ERROR")
    if name == "changerca-ob":
        assert source.events(every)


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
@FUZZ
@given(data=st.data())
def test_damaged_synthetic_case_files(
    synthetic_cases: dict[str, tuple[Path, str, list[Path]]], name: str, data: st.DataObject
) -> None:
    root, case_id, files = synthetic_cases[name]
    victim = data.draw(st.sampled_from(files))
    check_damaged(root, SYNTHETIC[name][0], case_id, victim, damage_file(data, victim, victim.read_bytes()))
