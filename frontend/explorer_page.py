"""What the explorer shows: the explanation read from the graph database (the stored result document
when the graph is down or not projected yet), incidents related through the graph, the explanatory
subgraph and the metrics timeline drawn from the series the investigation stored."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from frontend import figures
from frontend.results import result_of
from rca.incidents.models import Incident, Investigation
from rca.investigation.document import ResultDocument
from rca.telemetry.model import MetricSeries

log = logging.getLogger(__name__)

RELATED_LIMIT = 20  # related incidents listed: a page of them, newest first
GRAPH_DOWN = (
    "The graph database is unavailable right now: the hypotheses, evidence, root cause and path below are "
    "drawn from the investigation's stored result instead."
)
GRAPH_PENDING = (
    "This investigation is not in the graph database yet (its projection is pending or failed): the "
    "hypotheses, evidence, root cause and path below are drawn from its stored result instead."
)


@dataclass(frozen=True)
class ExplainedEvidence:
    """One evidence item behind a hypothesis, as the explorer lists it."""

    tool: str
    source: str
    verdict: str
    summary: str


@dataclass(frozen=True)
class ExplainedHypothesis:
    """A hypothesis the investigation examined, with its evidence."""

    key: str
    entity: str
    fault_kind: str
    state: str
    prior: float
    evidence: tuple[ExplainedEvidence, ...]


@dataclass(frozen=True)
class Explanation:
    """What the explorer shows of the conclusion, and where it was read from ("graph" or "document")."""

    source: str
    hypotheses: tuple[ExplainedHypothesis, ...]
    root_cause: str
    root_kind: str
    hops: tuple[figures.Hop, ...]

    @property
    def suspects(self) -> set[str]:
        """The services the explanation involves: root cause, path and every examined suspect."""
        named = {h.entity for h in self.hypotheses} | {self.root_cause}
        return (named | {h.cause for h in self.hops} | {h.effect for h in self.hops}) - {""}


def explanation(incident: Incident, investigation: Investigation) -> tuple[Explanation, str]:
    """The conclusion as the graph database holds it (Cypher reads through graphstore); when the graph
    is down, or does not hold this investigation yet, the stored result document, with a banner saying so.
    """
    from graphstore.errors import GraphUnavailable
    from graphstore.reads import explanation as read_explanation

    try:
        found = read_explanation(incident.pk)
    except GraphUnavailable as exc:
        log.warning("explorer of incident %s: %s", incident.pk, exc)
        return _fromresult_of(result_of(investigation)), GRAPH_DOWN
    if found is None or found["incident"].get("investigation") != investigation.pk:
        return _fromresult_of(result_of(investigation)), GRAPH_PENDING
    return _from_graph(found), ""


def _from_graph(found: Mapping[str, Any]) -> Explanation:
    root = found["root_cause"] or {}
    return Explanation(
        source="graph",
        hypotheses=tuple(
            ExplainedHypothesis(
                key=str(h.get("hypothesis", "")),
                entity=str(h.get("entity", "")),
                fault_kind=str(h.get("fault_kind", "")),
                state=str(h.get("state", "")),
                prior=float(h.get("prior") or 0.0),
                evidence=tuple(
                    ExplainedEvidence(
                        str(e.get("tool", "")),
                        str(e.get("source", "")),
                        str(e.get("verdict", "")),
                        str(e.get("summary", "")),
                    )
                    for e in h["evidence"]
                ),
            )
            for h in found["hypotheses"]
        ),
        root_cause=str(root.get("name", "")),
        root_kind=str(root.get("fault_kind", "")),
        hops=tuple(
            figures.Hop(
                cause=hop["cause"],
                effect=hop["effect"],
                edge=hop["edge"],
                evidence=tuple(hop["evidence"]),
                verified=hop["verified"],
                # The graph keeps the rules a hop failed; the others passed.
                rules=dict.fromkeys(hop["failed_rules"], "fail"),
            )
            for hop in found["path"]
        ),
    )


def _fromresult_of(document: ResultDocument) -> Explanation:
    root = document.root_cause
    return Explanation(
        source="document",
        hypotheses=tuple(
            ExplainedHypothesis(
                key=h.id,
                entity=h.entity,
                fault_kind=h.fault_kind,
                state=h.state,
                prior=h.prior,
                evidence=tuple(ExplainedEvidence(e.tool, e.source, e.verdict, e.summary) for e in h.evidence),
            )
            for h in document.hypotheses
        ),
        root_cause=root.entity if root else "",
        root_kind=root.fault_kind if root else "",
        hops=tuple(figures.Hop.from_stored(h) for h in document.to_json()["path"]),
    )


@dataclass(frozen=True)
class RelatedIncident:
    """An incident with the same root cause or the same failing edge, and which of the two."""

    incident_id: int
    title: str
    onset: str
    reasons: tuple[str, ...]


def related_incidents(incident: Incident) -> tuple[list[RelatedIncident], str]:
    """Incidents sharing the root cause or a failing edge, by graph traversal; or a note why none."""
    from graphstore.errors import GraphUnavailable
    from graphstore.reads import related_incidents as read_related

    try:
        found = read_related(incident.pk, limit=RELATED_LIMIT)
    except GraphUnavailable as exc:
        log.warning("related incidents of %s: %s", incident.pk, exc)
        return [], "The graph database is unavailable, so related incidents can't be shown."
    related = [
        RelatedIncident(
            int(i["id"]), str(i.get("title", "")), str(i.get("onset", ""))[:16], tuple(i["reasons"])
        )
        for i in found
    ]
    return related, "" if related else "No other incident has this root cause or a failing edge of this path."


def explorer(
    incident: Incident, investigation: Investigation, *, show_all: bool = False, all_series: bool = False
) -> dict[str, Any]:
    """The explorer: the conclusion (from the graph database, else the stored result), the explanatory
    subgraph (or the whole graph with `show_all`), the metrics timeline from the series the
    investigation stored (the top TIMELINE_SERIES by deviation, or all with `all_series`), related
    incidents, and notes on whatever could not be drawn."""
    document = result_of(investigation)
    explained, banner = explanation(incident, investigation)
    facts = document.facts
    notes: list[str] = []
    edges = [(e.caller, e.callee) for e in facts.topology.edges]
    if not facts.topology.entities:
        notes.append("The service topology was not recorded with this investigation; only the path is drawn.")
    everything = {*document.beliefs, *(e.name for e in facts.topology.entities), *explained.suspects}
    nodes, drawn_edges, collapsed = sorted(everything), edges, 0
    if not show_all:
        nodes, drawn_edges, collapsed = figures.explanatory_subgraph(everything, edges, explained.suspects)
    graph = figures.graph_figure(
        entities=nodes,
        edges=drawn_edges,
        beliefs=document.beliefs,
        path=explained.hops,
        symptom=incident.symptom_entity,
        root_cause=explained.root_cause,
        candidates=[c.model_dump() for c in document.candidates],
        collapsed=collapsed,
    )
    timeline, rows, hidden = explorer_timeline(incident, document, all_series)
    if timeline is None and document.route():
        notes.append("No examined metric series were recorded for the entities on the path.")
    related, related_note = related_incidents(incident)
    return {
        "graph": figures.to_json(graph),
        "timeline": timeline,
        "notes": notes,
        "banner": banner,
        "explanation": explained,
        "hops": explained.hops,
        "timeline_entities": rows,
        "hidden_series": hidden,
        "collapsed": collapsed,
        "show_all": show_all,
        "all_series": all_series,
        "service_count": len(everything),
        "related": related,
        "related_note": related_note,
    }


def explorer_timeline(
    incident: Incident, document: ResultDocument, all_series: bool
) -> tuple[dict[str, Any] | None, list[str], int]:
    """The timeline figure of the stored series (never refetched), one row per entity in path order;
    the entities drawn; how many series were left out (beyond the top TIMELINE_SERIES by deviation)."""
    facts = document.facts
    ranked = sorted(facts.series, key=lambda s: (-abs(s.z), s.entity, s.metric, s.instance or ""))
    chosen = ranked if all_series else ranked[: figures.TIMELINE_SERIES]
    order = {name: i for i, name in enumerate(document.route())}
    rows = sorted({s.entity for s in chosen}, key=lambda e: (order.get(e, len(order)), e))
    series: dict[str, list[MetricSeries]] = {name: [] for name in rows}
    baselines: dict[tuple[str, str, str | None], figures.Baseline] = {}
    for s in chosen:
        series[s.entity].append(
            MetricSeries(s.entity, s.metric, s.unit, np.array(s.timestamps), np.array(s.values), s.instance)
        )
        baselines[(s.entity, s.metric, s.instance)] = figures.Baseline(s.baseline, s.spread)
    if not chosen:
        return None, rows, 0
    changes = [
        figures.Change(c.at, f"{c.kind} {c.ref} on {c.entity}" + (f": {c.title}" if c.title else ""))
        for c in facts.citations
    ]
    figure = figures.timeline_figure(
        series,
        incident.onset.timestamp(),
        baselines=baselines,
        detected_onset=_detected_onset(document),
        changes=changes,
    )
    return figures.to_json(figure), rows, len(ranked) - len(chosen)


def _detected_onset(document: ResultDocument) -> float | None:
    """The anomaly onset the validating metrics evidence found, if it recorded one."""
    for item in document.chain.evidence:
        value = item.signals.get("m.onset")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None
