"""The metrics tool: is an entity the origin of a fault of this kind, by its metrics?"""

from __future__ import annotations

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.core.levels import detail_parts
from rca.tools.base import ToolContext, ToolResult
from rca.tools.faults import EXPLAINS, FAMILIES_OF_KIND, SUPPORT_ONLY, FaultKind
from rca.tools.graph import is_view
from rca.tools.metrics.analysis import FamilyFinding, dominance_for, origin_score
from rca.tools.metrics.profile import (
    alert_symptom,
    error_burst,
    metric_profile,
    onset_of,
    own_cause,
    own_z,
    peer_noise,
    runner_up,
    short_of_symptom,
    silent,
    spans_disown,
    unseen_by_callers,
    worse_change_elsewhere,
)
from rca.tools.stats import KNEE, Family


class MetricsTool:
    """Is `entity` the origin of a fault of this kind, by its metrics?"""

    name = "metrics"
    source = Source.METRICS

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Score the hypothesis's families at the entity, net of what its callees already show."""
        what, name = detail_parts(hypothesis)
        if what in ("instance", "metric"):
            return self._detail(ctx, hypothesis, what, name)
        kind = FaultKind(hypothesis.fault_kind)
        if kind is FaultKind.POD_FAILURE and (gone := silent(ctx, hypothesis.entity)) is not None:
            return self._silent(ctx, hypothesis.entity, gone)
        families = FAMILIES_OF_KIND[kind]
        prof = metric_profile(ctx, hypothesis.entity)
        present = [f for f in families if f in prof.findings]
        if not present:
            # Worded without the kind: the text classifier reads "no errors" as a healthy result, and a
            # series nobody recorded clears nothing.
            return ToolResult(
                summary=f"metrics: unmeasured for this hypothesis: {hypothesis.entity} reports none of "
                "the series it needs in the window",
                measurements={"kind": hypothesis.fault_kind},
                ok=True,
            )
        scored = [(own_z(ctx, hypothesis.entity, f), f) for f in present]
        (own, raw, culprit), family = max(scored, key=lambda item: item[0][0] / peer_noise(ctx, item[1]))
        noise = peer_noise(ctx, family)
        second, rival = runner_up(ctx, hypothesis.entity, family)
        lead = own / second if second > 0 else float("inf")
        upstream_of_change = ctx.record.changes.changed_below(ctx.digraph, hypothesis.entity)
        upstream_of_change += [
            e for e in worse_change_elsewhere(ctx, hypothesis.entity) if e not in upstream_of_change
        ]
        if upstream_of_change:
            lead = 0.0  # contested by a fresh change below it
        finding = prof.findings[family]
        onset = onset_of(ctx, finding, hypothesis.entity)
        dev = finding.deviation
        # A calm family that can only support the kind (network throughput for a delay) clears nothing.
        uncleared = own < KNEE and all(f in SUPPORT_ONLY.get(kind, frozenset()) for f in present)
        # Proof needs a deviation of the entity's own that it held from onset and that accounts for what
        # the alert measured: a view's figures are its caller's record of calls (the fault may sit
        # anywhere behind them); a series that reported nothing before onset has no local reference that
        # it was normal while the symptom was; and a family that explains the alert's only in part (a
        # slow dependency behind an availability alert) is a lead, not proof.
        symptom = alert_symptom(ctx)
        partial = symptom is not None and EXPLAINS[symptom].get(family, 0.0) < 1.0
        span_z = spans_disown(ctx, hypothesis.entity, family)
        unwaited = unseen_by_callers(ctx, hypothesis.entity, family)
        short = short_of_symptom(ctx, hypothesis.entity, finding)
        too_little = (
            f"its latency rose {short[0]:.3g} {finding.unit} against the alerting entity's {short[1]:.3g}: "
            "too little to account for it"
            if short is not None
            else ""
        )
        # A fault-kind claim (a hypothesis below a service) asks which kind is the fault, not whether the
        # entity is an origin: a kind that another kind at the same entity explains is its symptom.
        cause = own_cause(ctx, hypothesis) if hypothesis.parent_id is not None else None
        caveats = [
            text
            for text, applies in (
                (f"{cause}, which explains it", cause is not None),
                ("a client-side view, not a component", is_view(ctx.graph, hypothesis.entity)),
                ("no data before onset", not finding.anchored),
                (f"a baseline of {dev.samples} points", dev.thin),
                (f"{family.value} explains a {symptom.value if symptom else ''} alert only in part", partial),
                (f"{span_z[1]} moved {span_z[0]:.1f} sigma" if span_z else "", span_z is not None),
                ("none of its callers waits longer on it", unwaited),
                (too_little, short is not None),
                (f"calm {family.value} cannot clear a {kind.value} fault", uncleared),
            )
            if applies
        ]
        explained = f"; {culprit} shows {raw - own:.1f} of it" if culprit else ""
        # Errors come in bursts: a few failing minutes escape the window quantile, yet an entity that
        # failed as it never did in its baseline (for a moment, or for minutes outside its baseline's
        # episodes) did move, so its metrics cannot clear it.
        burst = (
            Family.ERRORS in families
            and own < KNEE
            and max(error_burst(ctx, hypothesis.entity), error_burst(ctx, hypothesis.entity, sustained=True))
            >= KNEE
        )
        # A rollout whose new version never reported leaves that version unobserved: the metrics show the
        # old version only, so they cannot clear the entity either.
        unseen = own < KNEE and ctx.record.changes.never_served(hypothesis.entity)
        summary = (
            f"metrics: {hypothesis.entity} {finding.metric} {dev.baseline:.4g} -> {dev.observed:.4g} "
            f"({raw:.1f} sigma, own {own:.1f}{explained}; peers deviate {noise:.1f}"
            + (f"; next {rival} {second:.1f})" if rival else ")")
            + (
                f"; changed below or beside it: {', '.join(upstream_of_change[:3])}"
                if upstream_of_change
                else ""
            )
            + "".join(f"; {text}" for text in caveats)
            + ("; errors burst beyond its baseline in some minutes" if burst else "")
            + ("; its new version has reported nothing since its rollout" if unseen else "")
        )
        measurements: dict[str, float | str] = {
            "family": family.value,
            "metric": finding.metric,
            "z": round(raw, 3),
            "own_z": round(own, 3),
            "peer_noise": round(noise, 3),
            "runner_up_z": round(second, 3),
            "baseline": dev.baseline,
            "observed": dev.observed,
        }
        if onset is not None:
            measurements["onset"] = onset
        return ToolResult(
            summary=summary,
            signals={
                "anomaly_score": round(
                    origin_score(
                        own, noise, lead, not caveats, burst or unseen or uncleared, dominance_for(family)
                    ),
                    4,
                )
            },
            measurements=measurements,
        )

    def _silent(self, ctx: ToolContext, entity: str, gone: FamilyFinding) -> ToolResult:
        """A pod failure, by the entity's telemetry stopping at onset while the others' kept coming: its
        zeroed series against its baseline, and whether another entity went silent as well (then the
        silence does not single it out)."""
        z = max(0.0, gone.deviation.z)
        rivals = [(f.deviation.z, e) for e in ctx.graph.names() if e != entity and (f := silent(ctx, e))]
        second, rival = max(rivals, default=(0.0, None))
        lead = z / second if second > 0 else float("inf")
        dev = gone.deviation
        summary = (
            f"metrics: {entity} stopped reporting at onset while other entities kept reporting; "
            f"{gone.metric} {dev.baseline:.4g} -> nothing ({z:.1f} sigma read as 0)"
            + (f"; {rival} went silent too ({second:.1f})" if rival else "")
        )
        return ToolResult(
            summary=summary,
            # A silence is no background every entity shows: the entities that keep reporting show
            # none, so its noise floor is the unit (as `peer_noise`'s lowest).
            signals={"anomaly_score": round(origin_score(z, 1.0, lead, True), 4)},
            measurements={
                "family": gone.family.value,
                "metric": gone.metric,
                "z": round(z, 3),
                "runner_up_z": round(second, 3),
                "baseline": dev.baseline,
                "observed": 0.0,
            },
        )

    def _detail(self, ctx: ToolContext, hypothesis: Hypothesis, what: str, name: str) -> ToolResult:
        """Does this instance (or entity-wide series) carry the entity's deviation of the kind, clearly
        more than the entity's other instances (or series) of those families do?"""
        entity = hypothesis.entity
        prof = metric_profile(ctx, entity)
        found = [
            f
            for family in FAMILIES_OF_KIND[FaultKind(hypothesis.fault_kind)]
            for f in prof.instances.get(family, {}).values()
        ]
        if what == "instance":
            mine = [f for f in found if f.instance == name]
            others = [f for f in found if f.instance not in (name, None)]
        else:
            mine = [f for f in found if f.instance is None and f.metric == name]
            others = [f for f in found if f.instance is None and f.metric != name]
        if not mine:
            return ToolResult(
                summary=f"metrics: unmeasured for this detail: {entity} reports no {hypothesis.fault_kind} "
                f"series for {what} {name}",
                measurements={"kind": hypothesis.fault_kind, "detail": hypothesis.detail},
            )
        best = max(mine, key=lambda f: f.deviation.z)
        z = max(0.0, best.deviation.z)
        rival = max((f.deviation.z for f in others), default=0.0)
        lead = z / rival if rival > 0 else float("inf")
        noise = peer_noise(ctx, best.family)
        dev = best.deviation
        score = origin_score(
            z, noise, lead, best.anchored and not dev.thin, dominance=dominance_for(best.family)
        )
        summary = (
            f"metrics: {entity} {what} {name}: {best.metric} {dev.baseline:.4g} -> {dev.observed:.4g} "
            f"({z:.1f} sigma; peers deviate {noise:.1f}"
            + (f"; its other {what}s at most {rival:.1f})" if others else f"; the only {what} measured)")
            + ("" if best.anchored else "; no data before onset")
            + (f"; a baseline of {dev.samples} points" if dev.thin else "")
        )
        return ToolResult(
            summary=summary,
            signals={"anomaly_score": round(score, 4)},
            measurements={
                "family": best.family.value,
                "metric": best.metric,
                "detail": hypothesis.detail,
                "z": round(z, 3),
                "rival_z": round(rival, 3),
                "peer_noise": round(noise, 3),
            },
        )
