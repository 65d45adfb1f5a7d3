"""Seconds per investigation (offline policy) over the dev cases of each dataset, against BARO.

Run: .venv/bin/python bench/bench_investigation.py [--data ../shared/data] [--dataset NAME ...] [--no-baro]
Targets (issue #20): Rootline's median at most 2 s per case on every dataset, and at most 3x the median of
BARO (the `baro` method of the RCAEval package) timed in the same run on the same metrics.

BARO lives only in the bench's own virtualenv (`var/bench-baro`, created on first use with
`pip install RCAEval==1.8.1 numpy pandas scikit-learn requests tqdm`), never in the project's
dependencies. For each case the bench writes the metrics the engine reads (every metric series of every
entity, the baseline window then the incident window that `rca.investigation.engine.windows` gives the
engine) as one CSV, and the BARO side times `baro(frame, anomalies=[baseline rows])` per case (given
`anomalies`, BARO splits by row and needs no `time` column), the reading of the CSV untimed.
Rootline's seconds are the evaluation runner's: loading the case and investigating it. So the ratio is
Rootline end to end against BARO's ranking alone, the comparison least favourable to Rootline.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import venv
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rca.evaluation.runner import Selection, run
from rca.investigation.engine import EngineConfig, windows
from rca.telemetry.cases import load_case
from rca.telemetry.model import TimeWindow
from rca.telemetry.recorded import RecordedCase

TARGET_MEDIAN_S = 2.0  # issue #20
TARGET_BARO_RATIO = 3.0  # issue #20: Rootline's median at most 3x BARO's
ROOT = Path(__file__).resolve().parents[1]
BARO_ENV = ROOT / "var" / "bench-baro"
BARO_PACKAGES = ("RCAEval==1.8.1", "numpy", "pandas", "scikit-learn", "requests", "tqdm")

# Runs inside the BARO virtualenv: times `baro` on each case's frame; prints {case: seconds} as JSON.
# `RCAEval/e2e/baro.py` is loaded by its file: on Python 3.11 the `RCAEval.e2e` package imports every
# method eagerly (matplotlib, causallearn, torch...), none of which BARO needs; the function is the same.
BARO_RUNNER = """
import importlib.util, json, sys, time
from pathlib import Path
import pandas as pd
import RCAEval
source = Path(RCAEval.__file__).parent / "e2e" / "baro.py"
spec = importlib.util.spec_from_file_location("rcaeval_baro", source)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
out = {}
for item in json.load(open(sys.argv[1])):
    frame = pd.read_csv(item["csv"])
    started = time.perf_counter()
    try:
        module.baro(frame, anomalies=[item["normal_rows"]])
    except ValueError as exc:  # e.g. a case whose windows hold no row on one side
        print(f"BARO failed on {item['case']}: {exc}", file=sys.stderr)
        continue
    out[item["case"]] = time.perf_counter() - started
print(json.dumps(out))
"""


def baro_python() -> Path:
    """The BARO virtualenv's interpreter, creating the environment on first use (RuntimeError saying
    which step failed)."""
    python = BARO_ENV / "bin" / "python"
    if not python.exists():
        venv.create(BARO_ENV, with_pip=True)
    probe = subprocess.run([python, "-c", "import RCAEval.io.time_series"], capture_output=True, check=False)
    if probe.returncode != 0:
        install = subprocess.run(
            [python, "-m", "pip", "install", "--quiet", *BARO_PACKAGES],
            capture_output=True,
            text=True,
            check=False,
        )
        if install.returncode != 0:
            raise RuntimeError(f"pip install {' '.join(BARO_PACKAGES)} failed:\n{install.stderr[-2000:]}")
    return python


def metrics_frame(case: RecordedCase, window: TimeWindow) -> pd.DataFrame:
    """Every metric series of every entity inside `window`, one column each, on a shared time axis."""
    columns: dict[str, pd.Series] = {}
    for entity in case.source.metric_entities():
        for series in case.source.metrics(entity, window):
            name = f"{entity}_{series.name}" + (f"_{series.instance}" if series.instance else "")
            columns[name] = pd.Series(series.values, index=series.timestamps).groupby(level=0).mean()
    frame = pd.DataFrame(columns).sort_index()
    return frame.ffill().bfill().fillna(0.0)


def baro_inputs(data: Path, selection: Selection, folder: Path) -> list[dict[str, object]]:
    """One CSV per case (baseline rows, then incident rows) and its manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    config = EngineConfig()
    items: list[dict[str, object]] = []
    for i, ref in enumerate(selection.refs()):
        case = load_case(data, ref)
        incident, baseline = windows(case.source, case.alert, config)
        normal, anomalous = metrics_frame(case, baseline), metrics_frame(case, incident)
        frame = pd.concat([normal, anomalous]).ffill().bfill().fillna(0.0)
        path = folder / f"{i:04d}.csv"
        frame.to_csv(path, index=False)
        items.append(
            {
                "case": f"{ref.dataset}/{ref.system}|{ref.case_id}",
                "csv": str(path),
                "normal_rows": len(normal),
            }
        )
    return items


def baro_seconds(data: Path, selection: Selection) -> dict[str, float]:
    """BARO's seconds per case, `dataset/system|case_id` -> seconds."""
    python = baro_python()
    folder = BARO_ENV / "cases"
    manifest = folder / "manifest.json"
    items = baro_inputs(data, selection, folder)
    manifest.write_text(json.dumps(items))
    script = BARO_ENV / "run_baro.py"
    script.write_text(BARO_RUNNER)
    done = subprocess.run([python, script, manifest], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"BARO failed:\n{done.stderr[-2000:]}")
    if done.stderr.strip():
        print(done.stderr.strip(), file=sys.stderr)
    return {str(k): float(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def _p95(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> int:
    """Print the timing table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--dataset", action="append", default=[])
    parser.add_argument("--no-baro", action="store_true", help="time Rootline only")
    args = parser.parse_args()
    if not (args.data / "cases_index.csv").is_file():
        print(f"bench_investigation: --data: no cases_index.csv in {args.data}", file=sys.stderr)
        return 2
    selection = Selection(args.data, "dev", tuple(args.dataset))
    rows = run(selection)
    baro: dict[str, float] = {}
    if not args.no_baro:
        try:
            baro = baro_seconds(args.data, selection)
        except (RuntimeError, OSError) as exc:
            print(f"bench_investigation: BARO not timed: {exc}", file=sys.stderr)
    ours: dict[str, list[float]] = {}
    theirs: dict[str, list[float]] = {}
    for row in rows:
        for key in (row.key, "pooled"):
            ours.setdefault(key, []).append(row.seconds)
            if f"{row.key}|{row.case_id}" in baro:
                theirs.setdefault(key, []).append(baro[f"{row.key}|{row.case_id}"])
    print(
        f"{'dataset':32s} {'cases':>5s} {'median s':>9s} {'p95 s':>7s} {'max s':>7s} {'BARO med s':>10s} "
        f"{'ratio':>7s}  targets: median <= {TARGET_MEDIAN_S} s, ratio <= {TARGET_BARO_RATIO}x"
    )
    for key in [*sorted(k for k in ours if k != "pooled"), "pooled"]:
        ordered = sorted(ours[key])
        median = statistics.median(ordered)
        verdict = "OK" if median <= TARGET_MEDIAN_S else "SLOW"
        line = f"{key:32s} {len(ordered):5d} {median:9.3f} {_p95(ordered):7.3f} {ordered[-1]:7.3f}"
        if theirs.get(key):
            other = statistics.median(theirs[key])
            ratio = median / other if other > 0 else float("inf")
            verdict += " " + ("OK" if ratio <= TARGET_BARO_RATIO else "SLOWER-THAN-3x-BARO")
            line += f" {other:10.4f} {ratio:7.1f}"
        else:
            line += f" {'-':>10s} {'-':>7s}"
        print(f"{line}  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
