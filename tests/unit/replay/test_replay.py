"""Replaying real dev cases: the files, the backfilled blocks, the timing, and no ground truth.

Data tests over one small dev case per replayed system; they skip cleanly when the public data folder
is absent (ROOTLINE_DATA_DIR, default `shared/data` next to the repository).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from rca.telemetry.cases import INDEX_NAME, CaseRef, read_index
from rca.telemetry.replay.replay import OutputInUse, ReplayError, backfill, namespace_of, replay_case
from tests.unit.replay.omtext import parse

REPO_ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = Path(os.environ.get("ROOTLINE_DATA_DIR", REPO_ROOT.parent / "shared" / "data")).resolve()
HAVE_DATA = (DATA_DIR / INDEX_NAME).is_file()
NOW = 1_800_000_000.0
# one small dev case per replayed system (the first of its recording day is not the smallest history)
CASES = ("rcd/carts-cpu/1", "nezha/2023-01-29/02", "nezha/2022-08-22/10", "changerca/2023-09-22_1")
GROUND_TRUTH_COLUMNS = ("root_cause_service", "root_cause_detail", "fault_type", "inject_time_utc")

pytestmark = pytest.mark.skipif(not HAVE_DATA, reason=f"public data not found at {DATA_DIR}")


def ref_of(case_id: str, index: Path | None = None) -> CaseRef:
    return next(r for r in read_index(DATA_DIR, index=index) if r.case_id == case_id)


@pytest.fixture(scope="module")
def replays(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    out = {}
    for case_id in CASES:
        folder = tmp_path_factory.mktemp("replay")
        out[case_id] = (folder, replay_case(DATA_DIR, ref_of(case_id), folder, token="rlt_test", now=NOW))
    return out


@pytest.mark.parametrize("case_id", CASES)
def test_a_replay_writes_backfilled_blocks_rules_and_configuration(
    replays: dict[str, tuple[Path, dict[str, Any]]], case_id: str
) -> None:
    folder, manifest = replays[case_id]
    body = (folder / "metrics.om").read_text()
    assert body.endswith("# EOF\n")
    samples = parse(body)
    assert len(samples) == manifest["samples"]
    assert max(s.time for s in samples) <= NOW  # older than anything Prometheus's head will hold
    blocks = [p for p in (folder / "prometheus" / "data").iterdir() if (p / "meta.json").is_file()]
    assert blocks, "promtool wrote no block"
    assert sum(json.loads((b / "meta.json").read_text())["stats"]["numSamples"] for b in blocks) == len(
        samples
    )
    timeline = manifest["timeline"]
    assert isinstance(timeline, dict)
    assert timeline["now"] == NOW
    assert NOW - timeline["onset"] >= 120.0  # a few minutes of the incident are in the replay
    assert timeline["onset"] - timeline["recorded_alert_at"] == timeline["shift_seconds"]
    rules = yaml.safe_load((folder / "prometheus" / "rules.yml").read_text())["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == manifest["rules"] != []
    assert {r["labels"]["service_name"] for r in rules} == {manifest["entry_service"]}
    config = yaml.safe_load((folder / "prometheus" / "prometheus.yml").read_text())
    assert config["rule_files"] == [str((folder / "prometheus" / "rules.yml").resolve())]
    token = folder / "alertmanager" / "intake-token"
    assert token.read_text() == "rlt_test"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert manifest["series_total"] == sum(manifest["series"].values())
    assert manifest["openmetrics_bytes"] == len(body.encode())


def test_each_system_is_written_under_its_conventions(
    replays: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    families = {case_id: set(manifest["series"]) for case_id, (_, manifest) in replays.items()}
    cluster = {"container_cpu_usage_seconds", "container_memory_working_set_bytes", "kube_pod_owner"}
    for found in families.values():
        assert cluster <= found
    assert "kube_replicaset_owner" in families["rcd/carts-cpu/1"]  # pods named by the Deployment convention
    assert "http_server_request_duration_seconds" in families["rcd/carts-cpu/1"]
    trainticket = families["nezha/2023-01-29/02"]
    assert {"traces_span_metrics_calls", "traces_span_metrics_duration_milliseconds"} <= trainticket
    assert {"traces_service_graph_request", "traces_service_graph_request_server_seconds"} <= trainticket
    assert "container_network_receive_bytes" in trainticket
    assert "traces_service_graph_request_client_seconds" in families["nezha/2022-08-22/10"]
    assert {"http_client_request_duration_seconds", "traces_service_graph_request_failed"} <= families[
        "changerca/2023-09-22_1"
    ]
    _, manifest = replays["nezha/2023-01-29/02"]
    assert manifest["spans"]["pairs"] > 0
    assert set(manifest["not_replayed"]) == {
        "node_cpu",
        "node_memory_utilization",
        "node_network_rx_bytes",
        "syscall_read",
        "syscall_write",
    }


def test_rcd_front_end_is_watched_by_its_containers(
    replays: dict[str, tuple[Path, dict[str, Any]]],
) -> None:
    _, manifest = replays["rcd/carts-cpu/1"]
    assert manifest["entry_service"] == "front-end"
    assert manifest["rules"] == ["CPUAnomaly", "MemoryAnomaly"]
    assert manifest["namespace"] == namespace_of("Sock Shop") == "sock-shop"


def test_the_replay_does_not_depend_on_ground_truth(tmp_path: Path) -> None:
    """Blanking every ground-truth column of the index changes no byte of what the cluster holds."""
    index = pd.read_csv(DATA_DIR / INDEX_NAME, dtype=str, keep_default_na=False)
    for column in GROUND_TRUTH_COLUMNS:
        index[column] = "withheld"
    blanked = tmp_path / INDEX_NAME
    index.to_csv(blanked, index=False)
    for case_id in ("changerca/2023-09-22_1", "nezha/2023-01-29/02"):
        plain, hidden = (
            tmp_path / f"{case_id.replace('/', '_')}-a",
            tmp_path / f"{case_id.replace('/', '_')}-b",
        )
        replay_case(DATA_DIR, ref_of(case_id), plain, token="t", now=NOW)
        replay_case(DATA_DIR, ref_of(case_id, blanked), hidden, token="t", now=NOW)
        for name in ("metrics.om", "prometheus/rules.yml"):
            assert (plain / name).read_bytes() == (hidden / name).read_bytes(), f"{case_id}: {name} differs"
        truth = pd.read_csv(DATA_DIR / INDEX_NAME, dtype=str, keep_default_na=False).set_index("case_id")
        fault = str(truth.loc[case_id, "fault_type"])
        text = (plain / "prometheus" / "rules.yml").read_text() + (plain / "replay.json").read_text()
        assert not re.search(rf"\b{re.escape(fault)}\b", text)
        assert not any(column in text for column in GROUND_TRUTH_COLUMNS)


def test_an_output_folder_in_use_is_refused(tmp_path: Path) -> None:
    (tmp_path / "old").write_text("x")
    with pytest.raises(OutputInUse, match="not empty"):
        replay_case(DATA_DIR, ref_of(CASES[0]), tmp_path, token="t", now=NOW)
    with pytest.raises(OutputInUse, match="not a folder"):
        replay_case(DATA_DIR, ref_of(CASES[0]), tmp_path / "old", token="t", now=NOW)


def test_promtool_failures_name_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.om"
    broken.write_text("# TYPE x counter\nx_total 1 10\n")  # no # EOF
    with pytest.raises(ReplayError, match=r"broken\.om"):
        backfill(broken, tmp_path / "data")
