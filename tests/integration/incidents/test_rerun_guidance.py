"""A re-run that applies recovery guidance, run in-process on a recorded dev case."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from rca.incidents.investigations import queue_investigation, run_investigation
from rca.incidents.models import Incident
from rca.investigation.recovery import EXTRA_TURNS, WIDEN_FACTOR

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
WHY = {"verify": "a deviation", "stop_when": "none", "grounds": "recorded"}


def test_a_rerun_applies_the_guidance_and_records_the_plan() -> None:
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    call_command("import_case", "rcd-sockshop", "rcd/carts-cpu/1", "--data", str(DATA), verbosity=0)
    incident = Incident.objects.get(recorded_case__case_id="rcd/carts-cpu/1")
    first = run_investigation(incident.investigations.get().pk)
    assert first.guidance == {}  # confident: nothing to recover from
    first.guidance = {
        "anchor": "budget_spent",
        "detail": "the turn or time budget ran out before a hypothesis was proven",
        "steps": [
            {"target": "carts", "operation": "examine", **WHY},
            {"target": "front-end", "operation": "widen_window", **WHY},
        ],
        "dropped": [],
    }
    first.save()
    second = run_investigation(queue_investigation(incident, guidance_from=first).pk)
    assert second.status == "succeeded"
    assert second.applied_guidance["from_investigation"] == first.pk
    assert second.applied_guidance["plan"] == {
        "examine_first": ["carts"],
        "extra_turns": EXTRA_TURNS,
        "widen": WIDEN_FACTOR,
        "applied": ["examine carts", "widen_window front-end"],
    }
    assert second.root_cause_entity == "carts"
    assert second.recall == {"priors": {}, "note": ""}  # guidance priors are not recall
