"""The traces tool: is an entity the origin of the fault, by its spans' own time, own errors and call
structure?"""

from __future__ import annotations

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.tools.base import ToolContext, ToolResult
from rca.tools.faults import SHOWN_IN_SPANS, FaultKind
from rca.tools.stats import unrefuted
from rca.tools.traces.profile import analyse, trace_profile


class TracesTool:
    """Is `entity` the origin of the fault, by its spans' own time, own errors and call structure?"""

    name = "traces"
    source = Source.TRACES

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Score the service's own trace anomaly, net of what its callees already show."""
        analysis = analyse(ctx)
        entity = hypothesis.entity
        p = trace_profile(ctx, entity)
        note = analysis.comparison.note
        if p.spans_observed == 0:
            return ToolResult(summary=f"traces: no spans of {entity} in the window ({note})")
        parts = [
            f"traces: {entity} own time p50 {p.own_p50_reference * 1e3:.1f} -> "
            f"{p.own_p50_observed * 1e3:.1f} ms, "
            f"p90 {p.own_p90_reference * 1e3:.1f} -> {p.own_p90_observed * 1e3:.1f} ms ({note})",
            f"own errors {p.errors_reference} -> {p.errors_observed}",
            *(
                [f"own time of {p.site} up {p.site_shift:.2f} log units at least"]
                if p.site is not None and p.site_shift > 0
                else []
            ),
            *(
                [f"the wire gaps of its calls in and out up {p.link_shift:.2f} log units (its network)"]
                if p.link_shift > 0
                else []
            ),
            f"latency {p.latency_z:.1f}, structure {p.structure_z:.1f}, calls {p.calls_z:.1f} sigma",
        ]
        if p.inherited_from:
            parts.append(f"part explained by {p.inherited_from}")
        parts.append(f"own score {p.own:.1f} of {p.raw:.1f}")
        # Spans that never say how they ended cannot show errors: quiet spans do not clear the entity
        # of a fault that only its answers or its logs would show.
        kind = FaultKind(hypothesis.fault_kind)
        no_outcomes = kind is FaultKind.ERRORS and not analysis.outcomes_recorded
        if no_outcomes:
            parts.append("the spans record no outcome, so errors are unseen")
        late = kind not in SHOWN_IN_SPANS
        if late:
            parts.append(f"a {kind.value} fault shows in own time late if at all: calm spans do not clear it")
        score = unrefuted(analysis.score(entity), no_outcomes or late)
        return ToolResult(
            summary="; ".join(parts),
            signals={"anomaly_score": round(score, 4)},
            measurements={
                "mode": analysis.comparison.kind.value,
                "spans": p.spans_observed,
                "spans_reference": p.spans_reference,
                "own_p50_ms": round(p.own_p50_observed * 1e3, 3),
                "own_p50_ms_reference": round(p.own_p50_reference * 1e3, 3),
                "own_p90_ms": round(p.own_p90_observed * 1e3, 3),
                "own_p90_ms_reference": round(p.own_p90_reference * 1e3, 3),
                "own_error_spans": p.errors_observed,
                "own_error_spans_reference": p.errors_reference,
                "own_shift": round(p.own_shift, 4),
                "site_shift": round(p.site_shift, 4),
                "link_shift": round(p.link_shift, 4),
                "structure_shift": round(p.structure_shift, 4),
                "calls_change": round(p.calls_change, 4),
                "latency_z": round(p.latency_z, 3),
                "structure_z": round(p.structure_z, 3),
                "calls_z": round(p.calls_z, 3),
                "errors_z": round(p.errors_z, 3),
                "raw_z": round(p.raw, 3),
                "own_z": round(p.own, 3),
            },
        )
