"""The changes tool: deploys, config changes and commits in the onset window, and whether one made
things worse.

A change in the window is the change citation, not proof: rollouts are often concurrent and most of
them are healthy. The tool therefore supports "a bad deploy of X" only when the data shows the change
made X worse, by a canary comparison: X's new-version instances against its old-version instances over
the same minutes (a comparison inside one service, so it is origin-specific: whatever X's callees do
reaches old and new instances alike), and against X's own pre-change baseline. A change that shows no
deviation is inconclusive, never a refutation (a quiet canary does not clear a suspect), and so is a
failed query.
"""

from __future__ import annotations

from rca.core.evidence import SignalValue, Source
from rca.core.hypotheses import Hypothesis
from rca.core.levels import detail_parts
from rca.core.verdict import DEFAULT_THRESHOLDS
from rca.tools.base import ToolContext, ToolResult
from rca.tools.changes.analysis import CANARY_FAMILIES, CanaryFinding, FamilyCanary
from rca.tools.changes.platform import platform_warnings
from rca.tools.changes.profile import canary_profile, started_by_onset
from rca.tools.faults import FAMILIES_OF_KIND, FaultKind
from rca.tools.stats import Family, squash


def _relative(seconds: float) -> str:
    minutes = abs(seconds) / 60.0
    return f"{minutes:.1f} min {'before' if seconds <= 0 else 'after'} onset"


def _families_of(fault_kind: str) -> tuple[Family, ...]:
    try:
        families = FAMILIES_OF_KIND[FaultKind(fault_kind)]
    except ValueError:
        return CANARY_FAMILIES
    return tuple(f for f in families if f in CANARY_FAMILIES) or CANARY_FAMILIES


def _measure(finding: CanaryFinding, best: FamilyCanary, z: float, score: float) -> dict[str, SignalValue]:
    """The canary figures kept with the evidence (never classified)."""
    out: dict[str, SignalValue] = {
        "family": best.family.value,
        "metric": best.metric,
        "comparison": "baseline_only" if best.service_wide else "canary",
        "z": round(z, 3),
        "score": score,
        "new_points": best.new_points,
        "old_points": best.old_points,
    }
    if best.canary is not None:
        out |= {"canary_z": round(best.canary.z, 3), "new_value": best.canary.observed}
        out["old_value"] = best.canary.baseline
    if best.baseline is not None:
        out |= {"pre_change_z": round(best.baseline.z, 3), "pre_change_value": best.baseline.baseline}
        out["observed"] = best.baseline.observed
    if best.growth is not None:
        out["growth_z"] = round(best.growth.z, 3)
    if best.inherited > 0:
        out["inherited_z"] = round(best.inherited, 3)  # what a callee shows (baseline-only comparisons)
    if finding.new_since is not None:
        out["new_since"] = finding.new_since
    return out


def _describe(finding: CanaryFinding, best: FamilyCanary) -> str:
    """`metric: new vs old (z), vs pre-change (z)` for a canary, `metric: before -> after (z)` otherwise."""
    if best.canary is not None:
        canary = best.canary
        text = f"{best.metric} new {canary.observed:.4g} vs old {canary.baseline:.4g} (z {canary.z:.1f})"
        if best.baseline is not None:
            text += f", vs pre-change {best.baseline.baseline:.4g} (z {best.baseline.z:.1f})"
        return text
    if best.baseline is None:
        return best.metric
    if not best.service_wide:
        where = "on new instances"
    else:
        where = "service-wide" if finding.split else "service-wide, no new-version instances"
    inherited = f", callees {best.inherited:.1f}" if best.inherited > 0 else ""
    return (
        f"{best.metric} {where} {best.baseline.baseline:.4g} -> {best.baseline.observed:.4g} "
        f"(z {best.baseline.z:.1f}{inherited})"
    )


class ChangesTool:
    """Did a change to `entity` in the onset window make it worse?

    Supports (anomaly_score >= 0.8) only when the canary shows the new version worse; a change with a
    quiet canary, a change after onset, or no change at all carries no decisive signal (inconclusive).
    """

    name = "changes"
    source = Source.CHANGES

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Name the change and score its canary; no decisive signal when nothing changed. A Kubernetes
        warning that names the hypothesis's kind (an OOM kill, a crash loop) is evidence first."""
        entity = hypothesis.entity
        warned = (
            None
            if detail_parts(hypothesis)[0] == "change"
            else platform_warnings(ctx, entity, hypothesis.fault_kind)
        )
        if warned is not None:
            return warned
        finding = canary_profile(ctx, entity)
        if finding is None:
            return ToolResult(summary=f"changes: no change to {entity} in the window")
        rollout = finding.rollout
        ref = rollout.reference or "-"
        change = f"{rollout.kind.value} {ref} to {entity} {_relative(rollout.started_at - ctx.onset)}"
        measurements: dict[str, SignalValue] = {
            "change_kind": rollout.kind.value,
            "reference": ref,
            "change_at": rollout.started_at,
            "change_offset_s": round(rollout.started_at - ctx.onset, 1),
            "changes_in_window": len(finding.changes),
            "new_instances": len(finding.new_instances),
            "old_instances": len(finding.old_instances),
        }
        if finding.never_served:
            measurements["new_version_served"] = "no"  # a lead for ranking, not a fault signal
        what, named = detail_parts(hypothesis)
        if what == "change" and named != ref:
            return ToolResult(
                summary=f"changes: {named} is not the change nearest to onset at {entity} ({change})",
                measurements=measurements,
            )
        if not started_by_onset(ctx, rollout):
            return ToolResult(
                summary=f"changes: {change}; it started after the alert", measurements=measurements
            )
        best = finding.strongest(_families_of(hypothesis.fault_kind))
        if best is None or not finding.aligned:
            return ToolResult(summary=f"changes: {change}; nothing to compare", measurements=measurements)
        z = max(0.0, best.z)
        score = round(squash(z), 4)
        measurements |= _measure(finding, best, z, score)
        if score <= DEFAULT_THRESHOLDS.anomaly_refutes:
            # A quiet canary does not clear the change: no decisive signal, so the verdict stays
            # inconclusive instead of the refutation a near-zero anomaly score would give. The text
            # names no metric, so no metric name can read as a fault cue.
            summary = f"changes: {change}; its new version does not deviate (z {z:.1f})"
            return ToolResult(summary=summary, measurements=measurements)
        summary = f"changes: {change}; {_describe(finding, best)}"
        return ToolResult(summary=summary, signals={"anomaly_score": score}, measurements=measurements)
