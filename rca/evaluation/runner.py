"""Run the real engine over recorded cases and score it.

The engine answers first; only then is the case's ground truth read (rca.evaluation.ground_truth),
so no code path can hand the answer to the engine.
"""

from __future__ import annotations

import csv
import json
import multiprocessing
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from rca.evaluation.ground_truth import ground_truth
from rca.evaluation.scoring import CaseRow, detail_correct, expected_kind, scorecard
from rca.investigation.engine import EngineConfig, investigate
from rca.investigation.result import InvestigationResult
from rca.telemetry.cases import CaseRef, load_case, read_index

# `synthetic` is the split of the cases `manage.py inject` writes.
SPLITS = ("dev", "holdout", "synthetic", "all")


@dataclass(frozen=True)
class Selection:
    """Which cases to evaluate."""

    data_dir: Path
    split: str = "dev"
    datasets: tuple[str, ...] = ()
    limit: int | None = None
    case_ids: tuple[str, ...] = ()

    def refs(self) -> list[CaseRef]:
        """The selected case references, in index order."""
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {self.split!r}")
        refs = read_index(
            self.data_dir, split=None if self.split == "all" else self.split, datasets=self.datasets or None
        )
        if self.case_ids:
            wanted = set(self.case_ids)
            refs = [r for r in refs if r.case_id in wanted]
        return refs[: self.limit] if self.limit is not None else refs


def evaluate_case(data_dir: Path, ref: CaseRef, config: EngineConfig) -> CaseRow:
    """Investigate one case with the engine, then (and only then) score it against its truth."""
    started = time.perf_counter()
    case = load_case(data_dir, ref)
    result = investigate(case.source, case.alert, config)
    seconds = time.perf_counter() - started
    top = result.candidates[0] if result.candidates else None
    truth = ground_truth(data_dir, ref)
    route = (result.root_cause.entity, *(h.effect for h in result.path)) if result.root_cause else ()
    return CaseRow(
        dataset=ref.dataset,
        system=ref.system,
        case_id=ref.case_id,
        truth=truth.service,
        truth_kind=expected_kind(ref.dataset, truth.fault_type),
        top5=tuple(c.entity for c in result.candidates[:5]),
        predicted_kind=top.fault_kind if top else None,
        exit=result.exit,
        validated=result.validated,
        tier=result.outcome.tier.value,
        capped_confidence=result.outcome.confidence.capped,
        seconds=seconds,
        hops=len(result.path),
        verified_hops=sum(1 for h in result.path if h.verification and h.verification.verified),
        predicted_detail=top.detail if top else "",
        detail_ok=detail_correct(
            ref.dataset, truth.service, truth.detail, top.entity if top else "", top.detail if top else ""
        ),
        anchor=result.guidance.anchor.value if result.guidance else "",
        guidance_steps=len(result.guidance.steps) if result.guidance else 0,
        label=truth.fault_type,
        features=run_features(result),
        route=route,
        truth_path=truth.path,
    )


def run_features(result: InvestigationResult) -> dict[str, float]:
    """The calibration scores of one investigation: those its conclusion computed and judged its exit by
    (rca.core.calibration.features), so what is fitted is exactly what is applied."""
    return dict(result.calibration_scores)


def run(
    selection: Selection,
    config: EngineConfig | None = None,
    on_case: Callable[[CaseRow], None] | None = None,
    jobs: int = 1,
) -> list[CaseRow]:
    """Evaluate every selected case, in index order; `jobs` > 1 runs that many worker processes."""
    refs = selection.refs()
    one = partial(evaluate_case, selection.data_dir, config=config or EngineConfig())
    rows: list[CaseRow] = []
    if jobs <= 1 or len(refs) <= 1:
        results: Iterable[CaseRow] = map(one, refs)
        for row in results:
            rows.append(row)
            if on_case is not None:
                on_case(row)
        return rows
    # fork: the workers inherit the loaded modules (no Django set-up, no re-import per worker).
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        for row in pool.map(one, refs):
            rows.append(row)
            if on_case is not None:
                on_case(row)
    return rows


def write(rows: Iterable[CaseRow], out: Path) -> dict[str, Any]:
    """Write `scorecard.json` and `cases.csv` under `out`; returns the scorecard."""
    materialised = list(rows)
    out.mkdir(parents=True, exist_ok=True)
    card = scorecard(materialised)
    (out / "scorecard.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    with (out / "cases.csv").open("w", newline="") as fh:
        fields = list(CaseRow.as_csv(materialised[0]).keys()) if materialised else ["dataset", "case_id"]
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(r.as_csv() for r in materialised)
    return card
