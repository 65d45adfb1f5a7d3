"""Plotly figures for the explorer: the explanatory graph and the metrics timeline.

Each builder takes plain data (what the Investigation row stored, what a TelemetrySource returned)
and returns the figure as a JSON-ready dict; the page hands it to plotly.js through a
`<script type="application/json">` block, so nothing inline ever runs (the CSP forbids it).
Colours, layout and hover text are decided here, not in the browser, so a figure is testable
without one.
"""

from __future__ import annotations

import functools
import html
import json
import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import plotly.io as pio

from rca.telemetry.model import MetricSeries

# Belief colours: the origin is the alarming one; a symptom is affected but not the cause.
BELIEF_COLOURS: dict[str, str] = {
    "origin": "#c92a2a",
    "symptom": "#e67700",
    "healthy": "#2b8a3e",
    "deferred": "#868e96",
}
BELIEF_LABELS: dict[str, str] = {
    "origin": "origin (root cause)",
    "symptom": "symptom",
    "healthy": "healthy",
    "deferred": "deferred (undecided)",
}
PATH_COLOUR = "#5f3dc4"
EDGE_COLOUR = "#ced4da"
ALERT_COLOUR = "#1c7ed6"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
# Distinct, colour-blind-friendly line colours for metrics, stable per metric name across rows.
METRIC_PALETTE = ("#1c7ed6", "#e8590c", "#2b8a3e", "#ae3ec9", "#d6336c", "#f59f00", "#0c8599", "#495057")
# Hover lines wrap at this width so a long evidence summary stays a readable box.
HOVER_WIDTH = 72


@dataclass(frozen=True)
class Hop:
    """One hop of the propagation path: the fault travelled from `cause` to `effect`."""

    cause: str
    effect: str
    edge: bool  # a recorded call edge backs the hop; False: inferred, drawn dashed
    evidence: tuple[str, ...] = field(default_factory=tuple)
    # Forward verification: None for a hop stored before hops were verified (then `edge` decides).
    verified: bool | None = None
    rules: Mapping[str, str] = field(default_factory=dict)  # rule -> pass / fail / unknown

    @classmethod
    def from_stored(cls, hop: Mapping[str, Any]) -> Hop:
        """A hop as `Investigation.propagation_path` stores it ({cause, effect, edge, evidence[],
        verification})."""
        check = hop.get("verification") if isinstance(hop.get("verification"), dict) else None
        return cls(
            cause=str(hop.get("cause", "")),
            effect=str(hop.get("effect", "")),
            edge=bool(hop.get("edge")),
            evidence=tuple(str(e) for e in hop.get("evidence") or ()),
            verified=bool(check["verified"]) if check else None,
            rules={str(k): str(v) for k, v in (check or {}).get("rules", {}).items()},
        )

    @property
    def solid(self) -> bool:
        """Drawn solid: it passed forward verification (or, unchecked, a recorded call edge backs it)."""
        return self.verified if self.verified is not None else self.edge

    @property
    def label(self) -> str:
        """The legend entry of its kind of hop."""
        if self.verified is None:
            return "propagation path" if self.edge else "path hop without a call edge"
        return "propagation path" if self.verified else "unverified hop"


class Figure:
    """A plotly figure as plain data (traces and layout), built without plotly's validating figure
    objects: those cost 60-170 ms a figure (measured on the explorer's two), most of a page's time.
    Keys are plotly.js attribute names; the browser test draws the result."""

    def __init__(self) -> None:
        self.data: list[dict[str, Any]] = []
        self.layout: dict[str, Any] = {}

    def add_trace(self, trace: dict[str, Any]) -> None:
        """Append a trace (drawn after, so above, the earlier ones)."""
        self.data.append(trace)


def scatter(**attributes: Any) -> dict[str, Any]:
    """A scatter trace."""
    return {"type": "scatter", **attributes}


@functools.cache
def _template() -> dict[str, Any]:
    """Plotly's "plotly_white" theme as plain data, computed once per process."""
    return dict(pio.templates["plotly_white"].to_plotly_json())


def to_json(fig: Figure) -> dict[str, Any]:
    """The figure as plain JSON types (numpy arrays and dates converted by plotly's encoder), with the
    white theme."""
    plain = {"data": fig.data, "layout": {**fig.layout, "template": _template()}}
    return dict(json.loads(pio.json.to_json_plotly(plain)))


def _hover(text: str) -> str:
    """Text safe for a plotly hover label (it renders a small HTML subset), wrapped to HOVER_WIDTH."""
    return "<br>".join(html.escape(line) for line in textwrap.wrap(text, HOVER_WIDTH)) or ""


# --- the explanatory graph ----------------------------------------------------------------------------


# Label geometry in pixels. A node's label sits centred under it, cut in the middle to LABEL_CHARS
# characters (head and tail kept: names of one system often share a prefix, "lambda_step_...", or a kind
# suffix, "..._AWS::Lambda"; the full name is in the hover); the node's slot is as wide as its label can
# be, so two labels in one layer never meet. CHAR_PX: the widest label of the example systems drawn by
# Chromium at 12 px (PetShop's capitalised AWS names) measured 8.3 px a character
# (tests/browser/test_explorer_labels.py prints it); 9 px leaves a margin.
LABEL_CHARS = 20
LABEL_HEAD = 10  # characters kept before the ellipsis; the rest of LABEL_CHARS - 1 after it
LABEL_FONT_PX = 12
CHAR_PX = 9.0
LABEL_GAP_PX = 16  # clear space between two neighbouring labels
NODE_PX = 30  # the largest node marker (the root cause)
LAYER_GAP_PX = 46  # between a layer's labels and the next layer's markers: room for the arrow heads
MARGIN_PX = 40  # around the drawing, inside the plot area
COLLAPSED = "+{n} services"
GRAPH_MARGIN_L = 20
PAGE_HALF_PX = 560  # half the card's inner width: rootline.css caps main at 1240 px, less its padding


def on_path_of(path: Sequence[Hop]) -> list[str]:
    """The services along the path, in order."""
    return list(dict.fromkeys(name for hop in path for name in (hop.cause, hop.effect)))


def short_label(name: str) -> str:
    """The name as drawn: at most LABEL_CHARS characters, its middle replaced by an ellipsis."""
    if len(name) <= LABEL_CHARS:
        return name
    tail = LABEL_CHARS - 1 - LABEL_HEAD
    return name[:LABEL_HEAD] + "\u2026" + name[-tail:]


def label_width(name: str) -> float:
    """An upper bound of the drawn label's width in pixels."""
    return len(short_label(name)) * CHAR_PX


@dataclass(frozen=True)
class Layout:
    """Node centres and edge routes in pixels, y growing downwards (layer 0, the callers, on top)."""

    positions: Mapping[str, tuple[float, float]]
    routes: Mapping[tuple[str, str], Sequence[tuple[float, float]]]
    width: float
    height: float


class _Box:
    """A grandalf vertex or edge view: the node's box in pixels, and where the layout put it."""

    def __init__(self, w: float = 0.0, h: float = 0.0) -> None:
        self.w, self.h = w, h
        self.xy: tuple[float, float] = (0.0, 0.0)
        self.path: list[tuple[float, float]] = []

    def setpath(self, points: list[tuple[float, float]]) -> None:
        self.path = [(float(x), float(y)) for x, y in points]


def layered_layout(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> Layout:
    """A layered (Sugiyama) drawing of a call graph: callers above their callees, few crossings.

    grandalf ranks each connected component (reversing a feedback edge of every call cycle), orders
    the layers to reduce crossings and places nodes by Brandes-Köpf, with each node's box as wide as
    its label's slot, so labels in a layer cannot overlap. Long edges are routed through the layers'
    dummy points. Components are laid side by side, the largest first. Deterministic for the same input.
    """
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    names = sorted(set(nodes))
    pairs = sorted({(a, b) for a, b in edges if a != b and a in names and b in names})
    if not names:
        return Layout({}, {}, 0.0, 0.0)
    vertices = {n: Vertex(n) for n in names}
    for name, vertex in vertices.items():
        vertex.view = _Box(label_width(name) + LABEL_GAP_PX, NODE_PX + LABEL_FONT_PX * 2)
    links = {(a, b): Edge(vertices[a], vertices[b]) for a, b in pairs}
    for link in links.values():
        link.view = _Box()
    graph = Graph(list(vertices.values()), list(links.values()))
    positions: dict[str, tuple[float, float]] = {}
    routes: dict[tuple[str, str], list[tuple[float, float]]] = {}
    left, height = 0.0, 0.0
    components = sorted(graph.C, key=lambda c: (-len(c.sV), min(v.data for v in c.sV)))
    for component in components:
        sugiyama = SugiyamaLayout(component)
        sugiyama.xspace, sugiyama.yspace = 0, LAYER_GAP_PX
        roots = sorted((v for v in component.sV if not v.e_in()), key=lambda v: v.data)
        sugiyama.init_all(roots=roots or None)
        sugiyama.draw(3)
        boxes = {v.data: v.view for v in component.sV}
        x0 = min(b.xy[0] - b.w / 2 for b in boxes.values())
        x1 = max(b.xy[0] + b.w / 2 for b in boxes.values())
        shift = left - x0
        for name, box in boxes.items():
            positions[name] = (box.xy[0] + shift, box.xy[1])
        for link in component.sE:
            key = (link.v[0].data, link.v[1].data)
            routes[key] = [(x + shift, y) for x, y in link.view.path]
        left += x1 - x0
        height = max(height, max(b.xy[1] + b.h / 2 for b in boxes.values()))
    return Layout(positions, routes, left, height)


def explanatory_subgraph(
    entities: Iterable[str], edges: Iterable[tuple[str, str]], keep: Iterable[str]
) -> tuple[list[str], list[tuple[str, str]], int]:
    """The part of the graph that explains the incident: `keep` (root cause, path, examined suspects)
    and their direct neighbours. Every other service collapses into one node, COLLAPSED, which stands
    in for them in the edges; returns the nodes, the edges and how many services were collapsed."""
    names = set(entities)
    core = set(keep) & names
    pairs = [(a, b) for a, b in edges if a in names and b in names and a != b]
    shown = set(core)
    for a, b in pairs:
        if a in core:
            shown.add(b)
        if b in core:
            shown.add(a)
    hidden = names - shown
    if not hidden:
        return sorted(names), pairs, 0
    collapsed = COLLAPSED.format(n=len(hidden))
    folded = {(a if a in shown else collapsed, b if b in shown else collapsed) for a, b in pairs}
    return [*sorted(shown), collapsed], sorted((a, b) for a, b in folded if a != b), len(hidden)


def graph_figure(
    *,
    entities: Sequence[str],
    edges: Sequence[tuple[str, str]],
    beliefs: Mapping[str, str],
    path: Sequence[Hop],
    symptom: str = "",
    root_cause: str = "",
    candidates: Sequence[Mapping[str, Any]] = (),
    collapsed: int = 0,
) -> Figure:
    """The service dependency graph with the propagation path drawn on top, root cause to symptom.

    Nodes are coloured by belief and labelled with their short name below them (the full name in the
    hover); path hops are thick violet lines (dashed when the hop failed forward verification, or, for
    a hop stored unverified, when no recorded call edge backs it) with an arrow head from cause to
    effect and a diamond at the midpoint whose hover carries that hop's evidence and rule results.
    Call edges are thin grey lines with an arrow head at the callee. `collapsed` > 0 means the node
    named COLLAPSED stands for that many services left out. The figure has a fixed size in pixels
    (one axis unit is one pixel), so the label slots the layout reserved are what the page shows.
    """
    # `beliefs` only colours: a service left out of `entities` (collapsed) is not drawn.
    names = sorted({*entities, *(h.cause for h in path), *(h.effect for h in path)} - {""})
    layout = layered_layout(names, edges)
    positions = layout.positions
    fig = Figure()
    hop_pairs = {frozenset((h.cause, h.effect)) for h in path}
    call_x: list[float | None] = []
    call_y: list[float | None] = []
    call_heads: list[int] = []
    for caller, callee in edges:
        route = layout.routes.get((caller, callee))
        if route is None or frozenset((caller, callee)) in hop_pairs:
            continue  # an edge under a hop: the hop is drawn over it
        points = _trimmed(route)
        call_x += [p[0] for p in points] + [None]
        call_y += [p[1] for p in points] + [None]
        call_heads += [0] * (len(points) - 1) + [9, 0]
    fig.add_trace(
        scatter(
            x=call_x,
            y=call_y,
            mode="lines+markers",
            name="calls",
            hoverinfo="skip",
            line={"color": EDGE_COLOUR, "width": 1.5},
            marker={"symbol": "arrow", "angleref": "previous", "size": call_heads, "color": "#adb5bd"},
            legendrank=900,
        )
    )
    _draw_path(fig, path, layout)
    _draw_nodes(fig, names, positions, beliefs, path, symptom, root_cause, candidates, collapsed)
    plot_w = layout.width + 2 * MARGIN_PX
    plot_h = layout.height + 2 * MARGIN_PX
    # Where a page narrower than the graph scrolls to first: the middle of the path (else the root cause
    # or the alerting service), in pixels from the figure's left edge.
    focus = [positions[n][0] for n in on_path_of(path) or [root_cause, symptom] if n in positions]
    focus_x = MARGIN_PX + (sum(focus) / len(focus) if focus else 0.0)  # in the plot area
    # The legend starts where that first view starts (half a page width left of the focus), so a wide
    # graph opened scrolled to its path shows its legend too.
    legend_x = max(0.0, focus_x - PAGE_HALF_PX) / plot_w
    fig.layout.update(
        meta={"focus_px": GRAPH_MARGIN_L + focus_x},
        showlegend=True,
        legend={"orientation": "h", "x": legend_x, "y": 1.0, "yanchor": "bottom", "font": {"size": 12}},
        hovermode="closest",
        dragmode="pan",
        width=int(plot_w) + GRAPH_MARGIN_L + 20,
        height=int(plot_h) + 80,
        margin={"l": GRAPH_MARGIN_L, "r": 20, "t": 60, "b": 20, "autoexpand": False},
        font={"family": FONT, "size": 13, "color": "#1d232b"},
        xaxis={"visible": False, "range": [-MARGIN_PX, layout.width + MARGIN_PX], "fixedrange": False},
        yaxis={"visible": False, "range": [layout.height + MARGIN_PX, -MARGIN_PX]},
        hoverlabel={"align": "left", "font": {"family": FONT, "size": 13}},
    )
    return fig


def _trimmed(route: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The route with its last point pulled back to the target marker's edge, where the head goes."""
    points = list(route)
    (x0, y0), (x1, y1) = points[-2], points[-1]
    length = math.hypot(x1 - x0, y1 - y0) or 1.0
    pull = min(NODE_PX / 2 + 3, length / 2)
    points[-1] = (x1 - (x1 - x0) / length * pull, y1 - (y1 - y0) / length * pull)
    return points


def _draw_path(fig: Figure, path: Sequence[Hop], layout: Layout) -> None:
    """One trace per hop (an unverified hop is dashed on its own), after the call edges: on top."""
    mids_x: list[float] = []
    mids_y: list[float] = []
    hop_text: list[str] = []
    for i, hop in enumerate(path):
        if hop.cause not in layout.positions or hop.effect not in layout.positions:
            continue
        route = layout.routes.get((hop.cause, hop.effect))
        if route is None and (back := layout.routes.get((hop.effect, hop.cause))) is not None:
            route = list(reversed(back))  # the fault travels against the call
        points = _trimmed(route or [layout.positions[hop.cause], layout.positions[hop.effect]])
        fig.add_trace(
            scatter(
                x=[p[0] for p in points],
                y=[p[1] for p in points],
                mode="lines+markers",
                hoverinfo="skip",
                name=hop.label,
                legendgroup=hop.label,
                showlegend=not any(h.label == hop.label for h in path[:i]),
                line={"color": PATH_COLOUR, "width": 5, "dash": "solid" if hop.solid else "dash"},
                marker={
                    "symbol": "arrow",
                    "angleref": "previous",
                    "size": [0] * (len(points) - 1) + [16],
                    "color": PATH_COLOUR,
                },
                legendrank=100,
            )
        )
        middle = points[len(points) // 2 - 1 : len(points) // 2 + 1]
        mids_x.append(sum(p[0] for p in middle) / len(middle))
        mids_y.append(sum(p[1] for p in middle) / len(middle))
        hop_text.append(_hop_hover(hop))
    fig.add_trace(
        scatter(
            x=mids_x,
            y=mids_y,
            mode="markers",
            name="hop evidence (hover)",
            hovertext=hop_text,
            hoverinfo="text",
            legendrank=110,
            marker={
                "symbol": "diamond",
                "size": 14,
                "color": "#fff",
                "line": {"color": PATH_COLOUR, "width": 2.5},
            },
            hoverlabel={"bgcolor": "#fff", "bordercolor": PATH_COLOUR, "font": {"color": "#1d232b"}},
        )
    )


def _draw_nodes(
    fig: Figure,
    names: Sequence[str],
    positions: Mapping[str, tuple[float, float]],
    beliefs: Mapping[str, str],
    path: Sequence[Hop],
    symptom: str,
    root_cause: str,
    candidates: Sequence[Mapping[str, Any]],
    collapsed: int,
) -> None:
    """The alerting ring, then one node trace per belief (the legend explains the colours)."""
    if symptom in positions:
        fig.add_trace(
            scatter(
                x=[positions[symptom][0]],
                y=[positions[symptom][1]],
                mode="markers",
                name="alerting service",
                hoverinfo="skip",
                legendrank=200,
                marker={"symbol": "circle-open", "size": 40, "line": {"color": ALERT_COLOUR, "width": 3}},
            )
        )
    scores = {str(c.get("entity")): c for c in candidates}
    on_path = set(on_path_of(path))
    folded = COLLAPSED.format(n=collapsed) if collapsed else None
    for rank, belief in enumerate(BELIEF_COLOURS):
        members = [
            n for n in names if n != folded and beliefs.get(n, "deferred") == belief and n in positions
        ]
        if not members:
            continue
        fig.add_trace(
            scatter(
                x=[positions[n][0] for n in members],
                y=[positions[n][1] for n in members],
                mode="markers+text",
                name=BELIEF_LABELS[belief],
                text=[short_label(n) for n in members],
                customdata=members,
                textposition="bottom center",
                textfont={"size": LABEL_FONT_PX, "color": "#1d232b"},
                hovertext=[
                    _node_hover(n, belief, scores.get(n), n == root_cause, n == symptom, n in on_path)
                    for n in members
                ],
                hoverinfo="text",
                legendrank=300 + rank,
                marker={
                    "size": [NODE_PX if n == root_cause else 24 for n in members],
                    "color": BELIEF_COLOURS[belief],
                    "line": {"color": "#fff", "width": 2},
                },
            )
        )
    if folded and folded in positions:
        fig.add_trace(
            scatter(
                x=[positions[folded][0]],
                y=[positions[folded][1]],
                mode="markers+text",
                name="other services (collapsed)",
                text=[folded],
                customdata=[folded],
                textposition="bottom center",
                textfont={"size": LABEL_FONT_PX, "color": "#495057"},
                hovertext=[f"{collapsed} services not involved in the explanation: use “show all”"],
                hoverinfo="text",
                legendrank=400,
                marker={"symbol": "square", "size": 24, "color": "#dee2e6", "line": {"color": "#868e96"}},
            )
        )


def _hop_hover(hop: Hop) -> str:
    status = "recorded call edge" if hop.edge else "no recorded call edge (inferred hop)"
    # No <b>/<i> in plotly text: plotly renders them as style attributes, which the CSP refuses.
    lines = [f"{html.escape(hop.cause)} → {html.escape(hop.effect)}", status]
    if hop.verified is not None:
        rules = ", ".join(f"{html.escape(rule)} {html.escape(result)}" for rule, result in hop.rules.items())
        lines.append(f"{'verified' if hop.verified else 'unverified'}: {rules}")
    lines += [f"• {_hover(e)}" for e in hop.evidence] or ["no evidence recorded for this hop"]
    return "<br>".join(lines)


def _node_hover(
    name: str, belief: str, candidate: Mapping[str, Any] | None, root: bool, alerting: bool, on_path: bool
) -> str:
    lines = [html.escape(name), f"belief: {belief}"]
    if root:
        lines.append("root cause")
    if alerting:
        lines.append("alerting service")
    if on_path and not root:
        lines.append("on the propagation path")
    if candidate:
        kind = html.escape(str(candidate.get("fault_kind", "")))
        lines.append(f"suspect score {float(candidate.get('score') or 0):.2f} ({kind})")
    return "<br>".join(lines)


# --- the metrics timeline -----------------------------------------------------------------------------

# The timeline's y axis is "sigma from baseline" on a signed log scale, so a 1,500-sigma CPU spike and
# a 4-sigma latency drift are both readable on one axis.
SIGMA = "\u03c3"  # the Greek letter, spelled out for the linter
SIGMA_TICKS = (-1000, -100, -10, -3, 0, 3, 10, 100, 1000)


CHANGE_COLOUR = "#495057"
LEGEND_PX = 230  # room on the right for the legend: a metric name and its instance at 12 px
TIMELINE_SERIES = 8  # series drawn by default; more is a click away ("show more")


@dataclass(frozen=True)
class Change:
    """A change or deploy the investigation found (a cited commit, a rollout): when, and what."""

    at: float
    label: str


def symlog(value: float) -> float:
    """sign(v) * log10(1 + |v|): monotone, 0 at 0, compresses large deviations."""
    return math.copysign(math.log10(1.0 + abs(value)), value)


@dataclass(frozen=True)
class Baseline:
    """Centre and scale of one metric's normal behaviour."""

    centre: float
    scale: float

    @classmethod
    def of(cls, values: np.ndarray[Any, Any]) -> Baseline | None:
        """Median and robust spread (MAD, else standard deviation) of the finite values; None if empty."""
        finite = values[np.isfinite(values)]
        if finite.size == 0:
            return None
        centre = float(np.median(finite))
        scale = float(np.median(np.abs(finite - centre))) * 1.4826
        if scale <= 1e-12:
            scale = float(np.std(finite))
        if scale <= 1e-12:
            scale = max(abs(centre) * 0.01, 1e-9)  # a constant baseline: 1% of its level counts as 1 sigma
        return cls(centre, scale)


def timeline_figure(
    series: Mapping[str, Sequence[MetricSeries]],
    onset: float,
    *,
    baselines: Mapping[tuple[str, str, str | None], Baseline] | None = None,
    detected_onset: float | None = None,
    changes: Sequence[Change] = (),
) -> Figure:
    """One row per entity (in path order), one line per metric, as sigma from that metric's baseline.

    `baselines` maps (entity, metric, instance) to the metric's normal behaviour (from the source's
    baseline window); a metric without one is measured against its own points before `onset`, or
    the whole window when there are none. The alert's onset is a dashed vertical line; the onset the
    evidence detected, when known and different, a dotted one; every change or deploy in `changes` is a
    grey line whose marker above the plot names it on hover. Hover shows the raw value and unit. The
    legend sits to the right of the plot, outside it.
    """
    entities = [e for e in series if series[e]] or list(series)
    rows = max(1, len(entities))
    fig = Figure()
    # One date axis at the bottom, shared by every row; row r has the y axis "y" (r = 1) or "y<r>".
    gap = min(0.06, 0.25 / rows)
    height = (1.0 - gap * (rows - 1)) / rows
    colours: dict[str, str] = {}
    shown: set[str] = set()
    for row, entity in enumerate(entities, start=1):
        axis = "y" if row == 1 else f"y{row}"
        top = 1.0 - (row - 1) * (height + gap)
        for s in series[entity]:
            if len(s) == 0:
                continue
            label = s.name if s.instance is None else f"{s.name} ({s.instance})"
            colour = colours.setdefault(s.name, METRIC_PALETTE[len(colours) % len(METRIC_PALETTE)])
            baseline = (baselines or {}).get((s.entity, s.name, s.instance)) or Baseline.of(
                s.values[s.timestamps < onset] if np.any(s.timestamps < onset) else s.values
            )
            if baseline is None:
                continue
            sigma = (s.values - baseline.centre) / baseline.scale
            finite = np.isfinite(sigma)
            # Numbers stay numpy arrays: plotly encodes them as compact typed arrays, and the hover
            # template formats them in the browser (no per-point strings in the page).
            fig.add_trace(
                scatter(
                    x=s.timestamps[finite] * 1000.0,  # ms since the epoch: plotly's native date value
                    y=(np.sign(sigma[finite]) * np.log10(1.0 + np.abs(sigma[finite]))).astype(np.float32),
                    customdata=np.column_stack((s.values[finite], sigma[finite])).astype(np.float32),
                    xaxis="x",
                    yaxis=axis,
                    mode="lines",
                    name=label,
                    legendgroup=s.name,
                    showlegend=s.name not in shown,  # each metric once: its colour is the same in every row
                    line={"color": colour, "width": 1.8},
                    hovertemplate=(
                        f"{html.escape(entity)} · {html.escape(label)}: "
                        f"%{{customdata[0]:.4g}} {html.escape(s.unit)} "
                        f"(%{{customdata[1]:+.1f}}{SIGMA}; baseline {baseline.centre:.4g})"
                        "<br>%{x|%Y-%m-%d %H:%M:%S} UTC<extra></extra>"
                    ),
                )
            )
            shown.add(s.name)
        fig.layout["yaxis" if row == 1 else f"yaxis{row}"] = {
            "domain": [max(0.0, top - height), top],
            "anchor": "x",
            # Bold through the font's weight attribute (a <b> tag would become a style attribute: CSP).
            "title": {"text": html.escape(entity), "font": {"size": 13, "weight": "bold"}, "standoff": 6},
            "tickvals": [symlog(v) for v in SIGMA_TICKS],
            "ticktext": [f"{v:+d}{SIGMA}" if v else "0" for v in SIGMA_TICKS],
            "zeroline": True,
            "zerolinecolor": "#adb5bd",
        }
        # The normal band (within 3 sigma of the baseline), shaded.
        fig.layout.setdefault("shapes", []).append(
            {
                "type": "rect",
                "xref": "x domain",
                "x0": 0,
                "x1": 1,
                "yref": axis,
                "y0": symlog(-3),
                "y1": symlog(3),
                "fillcolor": "#e9ecef",
                "opacity": 0.6,
                "line": {"width": 0},
                "layer": "below",
            }
        )
    _marker(fig, onset, "alert onset", {"color": "#c92a2a", "width": 2, "dash": "dash"})
    if detected_onset is not None and abs(detected_onset - onset) >= 1.0:
        line = {"color": "#5f3dc4", "width": 2, "dash": "dot"}
        _marker(fig, detected_onset, "detected onset", line, xanchor="left")
    for change in changes:
        _marker(fig, change.at, "\u25bc change", {"color": CHANGE_COLOUR, "width": 1.5}, change.label)
    fig.layout.update(
        height=150 * rows + 120,
        margin={"l": 90, "r": LEGEND_PX, "t": 90, "b": 40},
        font={"family": FONT, "size": 12, "color": "#1d232b"},
        hovermode="closest",
        dragmode="zoom",
        # Outside the plot, on its right: the lines keep the whole width of the plot area.
        legend={"orientation": "v", "x": 1.01, "xanchor": "left", "y": 1.0, "yanchor": "top"},
        hoverlabel={"align": "left", "font": {"family": FONT, "size": 12}},
        xaxis={
            "type": "date",
            "anchor": f"y{rows}" if rows > 1 else "y",
            "showspikes": True,
            "spikemode": "across",
            "spikethickness": 1,
            "spikecolor": "#868e96",
        },
    )
    return fig


def _marker(
    fig: Figure, at: float, text: str, line: dict[str, Any], hover: str = "", xanchor: str = "center"
) -> None:
    """A vertical line at `at` across every row, named above the plot (`hover`: more on hover)."""
    fig.layout.setdefault("shapes", []).append(
        {
            "type": "line",
            "xref": "x",
            "x0": _iso(at),
            "x1": _iso(at),
            "yref": "paper",
            "y0": 0,
            "y1": 1,
            "line": line,
        }
    )
    annotation: dict[str, Any] = {
        "x": _iso(at),
        "y": 1.0,
        "xref": "x",
        "yref": "paper",
        "yanchor": "bottom",
        "xanchor": xanchor,
        "text": text,
        "showarrow": False,
        "font": {"color": line["color"], "size": 12},
    }
    if hover:
        annotation.update(hovertext=html.escape(hover), yshift=16, font={"color": line["color"], "size": 11})
    fig.layout.setdefault("annotations", []).append(annotation)


def _iso(ts: float) -> str:
    """Unix seconds as the date string plotly reads on a date axis (UTC)."""
    return datetime.fromtimestamp(float(ts), tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
