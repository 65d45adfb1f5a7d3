"""The explorer stays readable on the largest example graphs: on PetShop (44 services) and
TrainTicket (46), by default and with "show all", no two drawn node labels overlap. The boxes are
the ones Chromium laid out (getBoundingClientRect of every label plotly drew), not an estimate."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from graphstore.sync import project_investigation
from rca.incidents.investigations import run_investigation
from rca.incidents.models import Incident
from tests.browser.conftest import Session, signed_in

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
CASES = (("petshop", "petshop/high_traffic/train/issue_0"), ("nezha", "nezha/2023-01-29/00"))

# Every drawn node label: its text and its box on the page.
LABEL_BOXES = """() => Array.from(document.querySelectorAll('#graph .scatterlayer .textpoint text'))
  .map(t => { const r = t.getBoundingClientRect();
              return {text: t.textContent, x: r.x, y: r.y, w: r.width, h: r.height}; })"""


@pytest.fixture
def cases(transactional_db: None, graph_server: object) -> list[Incident]:
    """The two largest example cases imported, investigated and projected into the graph."""
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    imported = []
    for dataset, case_id in CASES:
        call_command("import_case", dataset, case_id, "--data", str(DATA), verbosity=0)
        incident = Incident.objects.get(recorded_case__case_id=case_id)
        investigation = incident.investigations.get()
        run_investigation(investigation.pk)
        investigation.refresh_from_db()
        project_investigation(investigation)
        imported.append(incident)
    return imported


def _overlaps(boxes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (a["text"], b["text"])
        for a, b in itertools.combinations(boxes, 2)
        if a["x"] < b["x"] + b["w"]
        and b["x"] < a["x"] + a["w"]
        and a["y"] < b["y"] + b["h"]
        and b["y"] < a["y"] + a["h"]
    ]


def test_no_node_labels_overlap_on_the_largest_graphs(
    cases: list[Incident], sessions: list[Session], browser: Any, live_server: Any, artifacts: Path
) -> None:
    vera = signed_in(sessions, browser, live_server.url, artifacts, "viewer", "vera")
    page = vera.page
    for incident, (dataset, _) in zip(cases, CASES, strict=True):
        counts: dict[str, int] = {}
        for query, expected in (("", "explanation"), ("?all=1", "all")):
            vera.goto(f"/incidents/{incident.pk}/explorer/{query}")
            page.wait_for_selector("#graph[data-rendered=true] .plotly .main-svg")
            assert page.locator("#explanation").get_attribute("data-source") == "graph"
            boxes = page.evaluate(LABEL_BOXES)
            drawn = len(
                page.evaluate("() => document.getElementById('graph').data.flatMap(t => t.text || [])")
            )
            assert len(boxes) == drawn > 1
            if expected == "all":
                assert len(boxes) >= 40, f"{dataset}: {len(boxes)} labels with show all"
            assert not _overlaps(boxes), f"{dataset}{query}: overlapping labels {_overlaps(boxes)}"
            widest = max(b["w"] / max(len(b["text"]), 1) for b in boxes)
            print(f"{dataset}{query}: {len(boxes)} labels, widest {widest:.2f} px a character")
            vera.shot(f"explorer-{dataset}-{expected}")
            counts[expected] = len(boxes)
            folded = [
                int(b["text"][1:].split()[0]) for b in boxes if re.fullmatch(r"\+\d+ services", b["text"])
            ]
            counts[f"{expected} collapsed"] = sum(folded)
            assert page.locator("#show-all").count() == (1 if folded else 0)
        # "show all" draws every service the explanation collapsed into its "+N services" node.
        assert counts["all collapsed"] == 0
        assert (
            counts["all"]
            == counts["explanation"] - (counts["explanation collapsed"] > 0) + counts["explanation collapsed"]
        )
        assert counts["explanation"] < counts["all"] or counts["explanation collapsed"] == 0
