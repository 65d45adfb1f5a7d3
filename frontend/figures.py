"""Plotly figures for the explorer: the explanatory graph and the metrics timeline.

Each builder takes plain data (what the Investigation row stored, what a TelemetrySource returned)
and returns the figure as a JSON-ready dict; the page hands it to plotly.js through a
`<script type="application/json">` block, so nothing inline ever runs (the CSP forbids it).
Colours, layout and hover text are decided here, not in the browser, so a figure is testable
without one.
"""

from __future__ import annotations

import html
import json
import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import networkx as nx
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

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


def to_json(fig: go.Figure) -> dict[str, Any]:
    """The figure as plain JSON types (numpy arrays and dates converted by plotly's encoder)."""
    return dict(json.loads(fig.to_json()))


def _hover(text: str) -> str:
    """Text safe for a plotly hover label (it renders a small HTML subset), wrapped to HOVER_WIDTH."""
    return "<br>".join(html.escape(line) for line in textwrap.wrap(text, HOVER_WIDTH)) or ""


# --- the explanatory graph ----------------------------------------------------------------------------


def layered_positions(
    nodes: Iterable[str], edges: Iterable[tuple[str, str]]
) -> dict[str, tuple[float, float]]:
    """Positions for a call graph drawn top-down: callers above their callees.

    Layers are the topological generations of the graph's condensation (so call cycles share a
    layer); inside a layer, nodes are ordered by the mean position of their neighbours in the layer
    above (a few barycentre sweeps), which keeps crossings down. Deterministic for the same input.
    """
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(set(nodes)))
    graph.add_edges_from((a, b) for a, b in edges if a != b)
    if graph.number_of_nodes() == 0:
        return {}
    condensed = nx.condensation(graph)
    layer_of: dict[str, int] = {}
    for depth, generation in enumerate(nx.topological_generations(condensed)):
        for component in generation:
            for name in condensed.nodes[component]["members"]:
                layer_of[name] = depth
    layers: dict[int, list[str]] = {}
    for name in sorted(layer_of):
        layers.setdefault(layer_of[name], []).append(name)
    order = {name: float(i) for members in layers.values() for i, name in enumerate(members)}
    for _ in range(4):  # barycentre sweeps, top-down: each node moves under its callers
        for depth in sorted(layers)[1:]:

            def key(name: str) -> tuple[float, str]:
                above = [order[p] for p in graph.predecessors(name) if layer_of[p] < layer_of[name]]
                return (sum(above) / len(above) if above else order[name], name)

            layers[depth].sort(key=key)
            order.update({name: float(i) for i, name in enumerate(layers[depth])})
    widest = max(len(members) for members in layers.values())
    positions: dict[str, tuple[float, float]] = {}
    for depth, members in layers.items():
        offset = (widest - len(members)) / 2.0  # centre each layer under the widest one
        for i, name in enumerate(members):
            positions[name] = (offset + i, -float(depth))
    return positions


def graph_figure(
    *,
    entities: Sequence[str],
    edges: Sequence[tuple[str, str]],
    beliefs: Mapping[str, str],
    path: Sequence[Hop],
    symptom: str = "",
    root_cause: str = "",
    candidates: Sequence[Mapping[str, Any]] = (),
) -> go.Figure:
    """The service dependency graph with the propagation path highlighted from root cause to symptom.

    Nodes are coloured by belief; path hops are thick violet lines (dashed when the hop failed forward
    verification, or, for a hop stored unverified, when no recorded call edge backs it) with an arrow
    from cause to effect and a diamond at the midpoint whose hover label carries that hop's evidence
    and rule results. Call edges are thin grey arrows from caller to callee.
    """
    names = sorted({*entities, *beliefs, *(h.cause for h in path), *(h.effect for h in path)} - {""})
    positions = layered_positions(names, edges)
    fig = go.Figure()
    annotations: list[dict[str, Any]] = []

    # Call edges (caller -> callee): one thin line trace plus a small arrow head each. An edge under a
    # path hop gets no arrow: annotations draw above every trace and would cut through the path.
    hop_pairs = {frozenset((h.cause, h.effect)) for h in path}
    xs: list[float | None] = []
    ys: list[float | None] = []
    for caller, callee in edges:
        if caller in positions and callee in positions and caller != callee:
            (x0, y0), (x1, y1) = positions[caller], positions[callee]
            xs += [x0, x1, None]
            ys += [y0, y1, None]
            if frozenset((caller, callee)) not in hop_pairs:
                annotations.append(_arrow(positions[caller], positions[callee], EDGE_COLOUR, 1.2))
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            name="calls",
            hoverinfo="skip",
            line={"color": EDGE_COLOUR, "width": 1.5},
            legendrank=900,
        )
    )

    # The propagation path: one trace per hop, so an unverified hop can be dashed on its own.
    mids_x: list[float] = []
    mids_y: list[float] = []
    hop_text: list[str] = []
    for i, hop in enumerate(path):
        if hop.cause not in positions or hop.effect not in positions:
            continue
        (x0, y0), (x1, y1) = positions[hop.cause], positions[hop.effect]
        fig.add_trace(
            go.Scatter(
                x=[x0, x1],
                y=[y0, y1],
                mode="lines",
                hoverinfo="skip",
                name=hop.label,
                legendgroup=hop.label,
                showlegend=not any(h.label == hop.label for h in path[:i]),
                line={"color": PATH_COLOUR, "width": 5, "dash": "solid" if hop.solid else "dash"},
                legendrank=100,
            )
        )
        annotations.append(_arrow(positions[hop.cause], positions[hop.effect], PATH_COLOUR, 2.5, 1.4))
        mids_x.append((x0 + x1) / 2)
        mids_y.append((y0 + y1) / 2)
        hop_text.append(_hop_hover(hop))
    fig.add_trace(
        go.Scatter(
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

    # The alerting service: a ring behind its node, so the belief colour stays readable.
    if symptom in positions:
        fig.add_trace(
            go.Scatter(
                x=[positions[symptom][0]],
                y=[positions[symptom][1]],
                mode="markers",
                name="alerting service",
                hoverinfo="skip",
                legendrank=200,
                marker={"symbol": "circle-open", "size": 44, "line": {"color": ALERT_COLOUR, "width": 3}},
            )
        )

    # Nodes, one trace per belief so the legend explains the colours.
    scores = {str(c.get("entity")): c for c in candidates}
    on_path = {h.cause for h in path} | {h.effect for h in path}
    for rank, belief in enumerate(BELIEF_COLOURS):
        members = [n for n in names if beliefs.get(n, "deferred") == belief and n in positions]
        if not members:
            continue
        fig.add_trace(
            go.Scatter(
                x=[positions[n][0] for n in members],
                y=[positions[n][1] for n in members],
                mode="markers+text",
                name=BELIEF_LABELS[belief],
                text=members,
                textposition="middle right",
                textfont={"size": 13, "color": "#1d232b"},
                hovertext=[
                    _node_hover(n, belief, scores.get(n), n == root_cause, n == symptom, n in on_path)
                    for n in members
                ],
                hoverinfo="text",
                legendrank=300 + rank,
                marker={
                    "size": [30 if n == root_cause else 24 for n in members],
                    "color": BELIEF_COLOURS[belief],
                    "line": {"color": "#fff", "width": 2},
                },
            )
        )

    xs_all = [p[0] for p in positions.values()] or [0.0]
    ys_all = [p[1] for p in positions.values()] or [0.0]
    fig.update_layout(
        template="plotly_white",
        annotations=annotations,
        showlegend=True,
        legend={"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom", "font": {"size": 12}},
        hovermode="closest",
        dragmode="pan",
        height=max(420, 120 * (int(-min(ys_all)) + 1) + 160),
        margin={"l": 20, "r": 20, "t": 60, "b": 20},
        font={"family": FONT, "size": 13, "color": "#1d232b"},
        xaxis={"visible": False, "range": [min(xs_all) - 0.8, max(xs_all) + 0.8]},
        yaxis={"visible": False, "range": [min(ys_all) - 0.6, max(ys_all) + 0.45]},
        hoverlabel={"align": "left", "font": {"family": FONT, "size": 13}},
    )
    return fig


def _arrow(
    tail: tuple[float, float], tip: tuple[float, float], colour: str, width: float, size: float = 1.0
) -> dict[str, Any]:
    """An arrow head annotation on the last part of tail -> tip, stopping short of the node marker."""
    (x0, y0), (x1, y1) = tail, tip
    # The annotation's own line covers only the last 35%: the trace beneath draws the whole segment.
    ax, ay = x1 - (x1 - x0) * 0.35, y1 - (y1 - y0) * 0.35
    return {
        "x": x1,
        "y": y1,
        "ax": ax,
        "ay": ay,
        "xref": "x",
        "yref": "y",
        "axref": "x",
        "ayref": "y",
        "text": "",
        "showarrow": True,
        "arrowhead": 2,
        "arrowsize": size,
        "arrowwidth": width,
        "arrowcolor": colour,
        "standoff": 16,
    }


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
) -> go.Figure:
    """One row per entity (in path order), one line per metric, as sigma from that metric's baseline.

    `baselines` maps (entity, metric, instance) to the metric's normal behaviour (from the source's
    baseline window); a metric without one is measured against its own points before `onset`, or
    the whole window when there are none. The alert's onset is a dashed vertical line; the onset the
    evidence detected, when known and different, a dotted one. Hover shows the raw value and unit.
    """
    entities = [e for e in series if series[e]] or list(series)
    rows = max(1, len(entities))
    fig = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=min(0.06, 0.25 / rows),
    )
    colours: dict[str, str] = {}
    for row, entity in enumerate(entities, start=1):
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
                go.Scatter(
                    x=s.timestamps[finite] * 1000.0,  # ms since the epoch: plotly's native date value
                    y=(np.sign(sigma[finite]) * np.log10(1.0 + np.abs(sigma[finite]))).astype(np.float32),
                    customdata=np.column_stack((s.values[finite], sigma[finite])).astype(np.float32),
                    mode="lines",
                    name=label,
                    legendgroup=s.name,
                    line={"color": colour, "width": 1.8},
                    hovertemplate=(
                        f"{html.escape(entity)} · {html.escape(label)}: "
                        f"%{{customdata[0]:.4g}} {html.escape(s.unit)} "
                        f"(%{{customdata[1]:+.1f}}{SIGMA}; baseline {baseline.centre:.4g})"
                        "<br>%{x|%Y-%m-%d %H:%M:%S} UTC<extra></extra>"
                    ),
                ),
                row=row,
                col=1,
            )
        fig.update_yaxes(
            # Bold through the font's weight attribute (a <b> tag would become a style attribute: CSP).
            title={"text": html.escape(entity), "font": {"size": 13, "weight": "bold"}, "standoff": 6},
            tickvals=[symlog(v) for v in SIGMA_TICKS],
            ticktext=[f"{v:+d}{SIGMA}" if v else "0" for v in SIGMA_TICKS],
            zeroline=True,
            zerolinecolor="#adb5bd",
            row=row,
            col=1,
        )
        # The normal band (within 3 sigma of the baseline), shaded.
        fig.add_hrect(
            y0=symlog(-3),
            y1=symlog(3),
            fillcolor="#e9ecef",
            opacity=0.6,
            line_width=0,
            layer="below",
            row=row,
            col=1,
        )
    _fix_legend_dupes(fig)
    fig.add_vline(x=_iso(onset), line={"color": "#c92a2a", "width": 2, "dash": "dash"}, row="all", col=1)
    fig.add_annotation(
        x=_iso(onset),
        y=1.0,
        xref="x",
        yref="paper",
        yanchor="bottom",
        text="alert onset",
        showarrow=False,
        font={"color": "#c92a2a", "size": 12},
    )
    if detected_onset is not None and abs(detected_onset - onset) >= 1.0:
        fig.add_vline(
            x=_iso(detected_onset), line={"color": "#5f3dc4", "width": 2, "dash": "dot"}, row="all", col=1
        )
        fig.add_annotation(
            x=_iso(detected_onset),
            y=1.0,
            xref="x",
            yref="paper",
            yanchor="bottom",
            text="detected onset",
            showarrow=False,
            font={"color": "#5f3dc4", "size": 12},
            xanchor="left",
        )
    fig.update_layout(
        template="plotly_white",
        height=150 * rows + 120,
        margin={"l": 90, "r": 20, "t": 90, "b": 40},
        font={"family": FONT, "size": 12, "color": "#1d232b"},
        hovermode="closest",
        dragmode="zoom",
        # Above the plot (in pixels converted to paper units), clear of the axis labels below it.
        legend={"orientation": "h", "x": 0, "y": 1.0 + 30 / (150 * rows - 10), "yanchor": "bottom"},
        hoverlabel={"align": "left", "font": {"family": FONT, "size": 12}},
    )
    fig.update_xaxes(type="date", showspikes=True, spikemode="across", spikethickness=1, spikecolor="#868e96")
    return fig


def _fix_legend_dupes(fig: go.Figure) -> None:
    """Show each metric once in the legend (its colour is the same in every row)."""
    seen: set[str] = set()
    for trace in fig.data:
        group = trace.legendgroup
        trace.showlegend = group not in seen
        seen.add(group)


def _iso(ts: float) -> str:
    """Unix seconds as the date string plotly reads on a date axis (UTC)."""
    return datetime.fromtimestamp(float(ts), tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
