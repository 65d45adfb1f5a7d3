"""The Plotly figure builders, without a browser: layout, path highlighting, hover text, timeline."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from frontend import figures
from rca.telemetry.model import MetricSeries

EDGES = [("front-end", "carts"), ("front-end", "orders"), ("orders", "payment"), ("carts", "carts-db")]


def test_callers_sit_above_their_callees_and_the_layout_is_stable() -> None:
    nodes = ["front-end", "carts", "orders", "payment", "carts-db", "lonely"]
    layout = figures.layered_layout(nodes, EDGES)
    positions = layout.positions
    assert set(positions) == set(nodes)
    for caller, callee in EDGES:
        assert positions[caller][1] < positions[callee][1]  # pixels: y grows downwards
        route = layout.routes[(caller, callee)]
        assert route[0] == positions[caller]
        assert route[-1] == positions[callee]
    assert figures.layered_layout(list(reversed(nodes)), list(reversed(EDGES))).positions == positions
    assert min(x for x, _ in positions.values()) >= 0
    assert max(x for x, _ in positions.values()) <= layout.width


def test_labels_in_a_layer_get_slots_as_wide_as_they_are() -> None:
    fan = [f"a-service-with-a-long-name-{i}" for i in range(12)]
    layout = figures.layered_layout(["gateway", *fan], [("gateway", name) for name in fan])
    xs = sorted(layout.positions[name][0] for name in fan)
    widest = max(figures.label_width(name) for name in fan)
    assert min(b - a for a, b in itertools.pairwise(xs)) >= widest + figures.LABEL_GAP_PX - 1e-6


def test_a_call_cycle_is_laid_out_too() -> None:
    layout = figures.layered_layout(["a", "b", "c"], [("a", "b"), ("b", "a"), ("b", "c")])
    ys = {name: y for name, (_, y) in layout.positions.items()}
    assert ys["a"] < ys["b"] < ys["c"]


def test_long_names_are_cut_in_the_middle() -> None:
    assert figures.short_label("carts") == "carts"
    short = figures.short_label("lambda_step_priceGreaterThan55_AWS::Lambda::Function")
    assert len(short) == figures.LABEL_CHARS
    assert short.startswith("lambda_ste")
    assert short.endswith(":Function")


def test_the_explanatory_subgraph_collapses_what_is_not_involved() -> None:
    edges = [("gw", "a"), ("a", "b"), ("b", "c"), ("c", "d"), ("gw", "x"), ("x", "y")]
    nodes, kept, collapsed = figures.explanatory_subgraph(
        ["gw", "a", "b", "c", "d", "x", "y"], edges, ["b", "c"]
    )
    assert collapsed == 3  # gw, x and y are neither involved nor a neighbour of what is
    assert nodes == ["a", "b", "c", "d", "+3 services"]
    assert ("+3 services", "a") in kept
    assert ("b", "c") in kept
    assert figures.explanatory_subgraph(["a", "b"], [("a", "b")], ["a"]) == (["a", "b"], [("a", "b")], 0)


def _figure(edge: bool = True) -> dict[str, Any]:
    hop = figures.Hop("carts", "front-end", edge, ("metrics: carts cpu 1.2 -> 100 <b>", "topology: ok"))
    fig = figures.graph_figure(
        entities=["front-end", "carts", "orders", "payment", "carts-db"],
        edges=EDGES,
        beliefs={"carts": "origin", "front-end": "symptom", "orders": "healthy"},
        path=[hop],
        symptom="front-end",
        root_cause="carts",
        candidates=[{"entity": "carts", "fault_kind": "cpu", "score": 7.3}],
    )
    return figures.to_json(fig)


def test_the_path_is_highlighted_and_each_hop_carries_its_evidence() -> None:
    fig = _figure()
    by_name = {t["name"]: t for t in fig["data"]}
    path = by_name["propagation path"]
    assert path["line"]["color"] == figures.PATH_COLOUR
    assert path["line"]["width"] > 2
    assert path["line"]["dash"] == "solid"
    hover = by_name["hop evidence (hover)"]["hovertext"][0]
    assert "carts → front-end" in hover
    assert "carts cpu 1.2 -&gt; 100 &lt;b&gt;" in hover  # escaped: plotly renders a subset of HTML
    assert "<b>" not in hover  # bold tags become style attributes, which the CSP refuses
    assert by_name["origin (root cause)"]["marker"]["color"] == figures.BELIEF_COLOURS["origin"]
    assert by_name["healthy"]["text"] == ["orders"]
    assert by_name["calls"]["marker"]["symbol"] == "arrow"  # heads as markers, beneath the path
    assert [t["name"] for t in fig["data"]].index("calls") < [t["name"] for t in fig["data"]].index(
        "propagation path"
    )
    assert by_name["deferred (undecided)"]["text"] == ["carts-db", "payment"]
    assert fig["layout"]["dragmode"] == "pan"


def test_a_hop_without_a_call_edge_is_dashed() -> None:
    by_name = {t["name"]: t for t in _figure(edge=False)["data"]}
    assert by_name["path hop without a call edge"]["line"]["dash"] == "dash"


def test_an_unverified_hop_is_dashed_and_its_hover_names_the_rule_it_failed() -> None:
    stored = {
        "cause": "carts",
        "effect": "front-end",
        "edge": True,
        "evidence": ["carts cpu 1.2 -> 100"],
        "verification": {
            "verified": False,
            "rules": {"structural": "pass", "statistical": "pass", "temporal": "fail"},
            "failed": ["temporal"],
        },
    }
    hop = figures.Hop.from_stored(stored)
    fig = figures.to_json(
        figures.graph_figure(
            entities=["carts", "front-end"],
            edges=[("front-end", "carts")],
            beliefs={"carts": "origin", "front-end": "symptom"},
            path=[hop],
            symptom="front-end",
            root_cause="carts",
        )
    )
    by_name = {t["name"]: t for t in fig["data"]}
    assert by_name["unverified hop"]["line"]["dash"] == "dash"
    assert "unverified: structural pass, statistical pass, temporal fail" in str(
        by_name["hop evidence (hover)"]["hovertext"]
    )
    passed = {**stored["verification"], "verified": True}  # type: ignore[dict-item]
    verified = figures.Hop.from_stored({**stored, "verification": passed})
    assert verified.solid
    assert verified.label == "propagation path"


def test_the_timeline_marks_the_onset_and_measures_against_the_baseline() -> None:
    t = np.arange(1000.0, 1600.0, 10.0)
    cpu = np.where(t < 1300, 1.0, 100.0)
    series = {
        "carts": [MetricSeries("carts", "cpu", "%", t, cpu)],
        "front-end": [MetricSeries("front-end", "latency_p99", "s", t, np.full(t.shape, 0.2))],
    }
    baselines: dict[tuple[str, str, str | None], figures.Baseline] = {
        ("carts", "cpu", None): figures.Baseline(1.0, 0.5)
    }
    deploy = figures.Change(1250.0, "deploy v2 on carts: raise the pool size")
    fig = figures.to_json(
        figures.timeline_figure(series, 1300.0, baselines=baselines, detected_onset=1310.0, changes=[deploy])
    )
    assert len(fig["data"]) == 2
    shapes = fig["layout"]["shapes"]
    lines = [s for s in shapes if s.get("type") == "line"]
    assert len(lines) == 3  # alert onset, detected onset and the deploy, each across every row
    assert {line["yref"] for line in lines} == {"paper"}
    texts = {a["text"] for a in fig["layout"]["annotations"]}
    assert {"alert onset", "detected onset", "\u25bc change"} <= texts
    hovers = [a.get("hovertext") for a in fig["layout"]["annotations"]]
    assert "deploy v2 on carts: raise the pool size" in hovers
    assert fig["layout"]["legend"]["x"] > 1  # outside the plot area, on its right
    assert fig["layout"]["xaxis"]["type"] == "date"
    assert fig["layout"]["yaxis"]["title"]["text"] == "carts"


def test_symlog_is_monotone_and_signed() -> None:
    values = [-1000.0, -3.0, 0.0, 3.0, 1000.0]
    out = [figures.symlog(v) for v in values]
    assert out == sorted(out)
    assert figures.symlog(0.0) == 0.0
    assert figures.symlog(-3.0) == -figures.symlog(3.0)


def test_baseline_of_a_constant_or_empty_series() -> None:
    assert figures.Baseline.of(np.array([])) is None
    flat = figures.Baseline.of(np.array([5.0, 5.0, 5.0]))
    assert flat is not None
    assert flat.centre == 5.0
    assert flat.scale > 0
