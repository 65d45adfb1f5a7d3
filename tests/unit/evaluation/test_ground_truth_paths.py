"""A synthetic suite's injected paths are ground truth, read beside its index by evaluation only."""

from __future__ import annotations

from pathlib import Path

import pytest

from rca.evaluation.ground_truth import PATHS_NAME, ground_truth
from rca.telemetry.cases import CaseIndexError, read_index

INDEX = (
    "dataset,case_id,system,split,root_cause_service,root_cause_detail,fault_type,inject_time_utc,alert,"
    "telemetry,files\n"
    "rcd-sockshop,s/1,Sock Shop,synthetic,carts-db,,latency,,,metrics,x/anomalous.csv\n"
    "rcd-sockshop,s/2,Sock Shop,synthetic,carts,,cpu,,,metrics,y/anomalous.csv\n"
)


def test_paths_are_read_per_case(tmp_path: Path) -> None:
    (tmp_path / "cases_index.csv").write_text(INDEX)
    (tmp_path / PATHS_NAME).write_text("case_id,path\ns/1,carts-db > carts > front-end\n")
    one, two = read_index(tmp_path)
    assert ground_truth(tmp_path, one).path == ("carts-db", "carts", "front-end")
    assert ground_truth(tmp_path, two).path == ()


def test_no_paths_file_means_no_paths(tmp_path: Path) -> None:
    (tmp_path / "cases_index.csv").write_text(INDEX)
    assert ground_truth(tmp_path, read_index(tmp_path)[0]).path == ()


def test_a_malformed_paths_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "cases_index.csv").write_text(INDEX)
    (tmp_path / PATHS_NAME).write_text("case,route\ns/1,a\n")
    with pytest.raises(CaseIndexError, match=PATHS_NAME):
        ground_truth(tmp_path, read_index(tmp_path)[0])
