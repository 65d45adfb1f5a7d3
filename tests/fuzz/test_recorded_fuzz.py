"""Dataset loaders reading damaged files: a result, or a ValueError naming the file.

A small dev case of each CSV/JSON-based dataset is copied into a temp folder (its files cut to a few
dozen rows); each example damages one file (truncated, bytes replaced, a cell or the JSON replaced
by junk) and the case is loaded and queried in full. `CaseIndexError` is a ValueError too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rca.telemetry.cases import case_files, find_case, load_case
from tests.fuzz.conftest import FUZZ, JSON, NASTY_TEXT

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
CASES = {
    "rcd-sockshop": "rcd/carts-cpu/1",
    "petshop": "petshop/low_traffic/train/issue_0",
}
ROWS = 40  # enough rows for the alert rule to run, few enough to rewrite per example


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


def damage(data: st.DataObject, original: bytes, is_json: bool) -> bytes:
    how = data.draw(st.sampled_from(["truncate", "bytes", "cell", "json", "empty"]))
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


@pytest.mark.parametrize("dataset", sorted(CASES))
@FUZZ
@given(data=st.data())
def test_damaged_case_files(
    small_cases: dict[str, tuple[Path, list[Path]]], dataset: str, data: st.DataObject
) -> None:
    root, files = small_cases[dataset]
    victim = data.draw(st.sampled_from(files))
    original = victim.read_bytes()
    victim.write_bytes(damage(data, original, victim.suffix == ".json"))
    try:
        ref = find_case(root, dataset, CASES[dataset])
        case = load_case(root, ref)
        source = case.source
        source.topology()
        source.baseline_window(case.window.start)
        for entity in source.metric_entities():
            source.metrics(entity, case.window)
    except ValueError as exc:
        failure: ValueError | None = exc
    else:
        failure = None
    finally:
        victim.write_bytes(original)
    if failure is not None:
        assert victim.name in str(failure), f"{type(failure).__name__}: {failure}"
