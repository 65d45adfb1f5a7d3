"""What the explorer shows: the explanatory graph and the metrics timeline, drawn from the stored result
document (the graph the engine saw and the series its tools examined)."""

from __future__ import annotations

from typing import Any

import numpy as np

from frontend import figures
from frontend.results import result_of
from rca.incidents.models import Incident, Investigation
from rca.investigation.document import ResultDocument
from rca.telemetry.model import MetricSeries

TIMELINE_MAX_ENTITIES = 4


def explorer(incident: Incident, investigation: Investigation) -> dict[str, Any]:
    """The explorer's two figures (as JSON) and notes on whatever could not be drawn, from the stored
    result document: the graph the engine saw and the series its tools examined."""
    document = result_of(investigation)
    facts = document.facts
    notes: list[str] = []
    hops = [figures.Hop.from_stored(h) for h in document.to_json()["path"]]
    edges = [(e.caller, e.callee) for e in facts.topology.edges]
    if not facts.topology.entities:
        notes.append("The service topology was not recorded with this investigation; only the path is drawn.")
    graph = figures.graph_figure(
        entities=[*document.beliefs, *(e.name for e in facts.topology.entities)],
        edges=edges,
        beliefs=document.beliefs,
        path=hops,
        symptom=incident.symptom_entity,
        root_cause=investigation.root_cause_entity,
        candidates=[c.model_dump() for c in document.candidates],
    )
    on_path = document.route()[:TIMELINE_MAX_ENTITIES]
    series: dict[str, list[MetricSeries]] = {name: [] for name in on_path}
    baselines: dict[tuple[str, str, str | None], figures.Baseline] = {}
    for s in facts.series:
        if s.entity in series:
            series[s.entity].append(
                MetricSeries(
                    s.entity, s.metric, s.unit, np.array(s.timestamps), np.array(s.values), s.instance
                )
            )
            baselines[(s.entity, s.metric, s.instance)] = figures.Baseline(s.baseline, s.spread)
    timeline: dict[str, Any] | None = None
    if any(series.values()):
        onset = incident.onset.timestamp()
        timeline = figures.to_json(
            figures.timeline_figure(
                series, onset, baselines=baselines, detected_onset=_detected_onset(document)
            )
        )
    elif on_path:
        notes.append("No examined metric series were recorded for the entities on the path.")
    return {
        "graph": figures.to_json(graph),
        "timeline": timeline,
        "notes": notes,
        "hops": hops,
        "timeline_entities": on_path,
    }


def _detected_onset(document: ResultDocument) -> float | None:
    """The anomaly onset the validating metrics evidence found, if it recorded one."""
    for item in document.chain.evidence:
        value = item.signals.get("m.onset")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None
