"""The logs tool: is an entity the origin of the fault, by its logs (see `rca.tools.logs.analysis`)?"""

from __future__ import annotations

import math

from rca.core.evidence import Source
from rca.core.hypotheses import Hypothesis
from rca.tools.base import ToolContext, ToolResult
from rca.tools.faults import SHOWN_IN_LOGS, FaultKind
from rca.tools.logs.analysis import score
from rca.tools.logs.profile import analyse, log_profile
from rca.tools.logs.templates import short
from rca.tools.stats import KNEE, unrefuted


class LogsTool:
    """Is `entity` the origin of the fault, by its logs?"""

    name = "logs"
    source = Source.LOGS

    def run(self, ctx: ToolContext, hypothesis: Hypothesis) -> ToolResult:
        """Score the entity's own log anomaly (pair breaks, bursts and template shift net of blame)."""
        analysis = analyse(ctx)
        conventions = ctx.source.conventions
        entity = hypothesis.entity
        prof = log_profile(ctx, entity)
        note = analysis.comparison.note
        if prof.lines_observed == 0 and prof.lines_reference == 0:
            return ToolResult(summary=f"logs: no log lines for {entity} in the window ({note})")
        parts = [
            f"logs: {entity} {prof.problems_observed} warn/error lines "
            f"({prof.problem_rate_observed:.1f}/min"
            + (f" vs {prof.problem_rate_reference:.1f}/min" if analysis.comparison.reference else "")
            + f", {note})"
        ]
        pair = prof.broken
        if pair is not None and pair.z >= KNEE:
            parts.append(
                f"'{short(pair.first, conventions)}' no longer followed by '{short(pair.then, conventions)}' "
                f"({pair.broken_observed}/{pair.units_observed} vs "
                f"{pair.broken_reference}/{pair.units_reference} before; "
                f"{analysis.pair_sigma(entity):.1f} sigma over {analysis.pairs_tested} pairs tested)"
            )
        new = prof.new_templates
        if new:
            parts.append(f"{len(new)} new templates, e.g. '{short(new[0].template, conventions)}'")
        top = prof.top
        if top is not None and top.z < -KNEE:
            parts.append(f"collapsed: '{short(top.template, conventions)}' {top.reference} -> {top.observed}")
        if prof.blamed and prof.own < prof.raw:
            parts.append(f"{prof.blamed_share:.0%} of its problems are failed calls to {prof.blamed}")
        if prof.inherited_units:
            parts.append(f"{prof.inherited_units} broken requests follow failures below it")
        if not prof.own_reference:
            parts.append("too few lines of its own before onset to compare")
        parts.append(f"own score {prof.own:.1f} of {prof.raw:.1f}")
        kind = FaultKind(hypothesis.fault_kind)
        unseen = kind not in SHOWN_IN_LOGS
        if unseen:
            parts.append(f"a {kind.value} fault writes nothing of its own, so calm logs do not clear it")
        ratio = (
            prof.problem_rate_observed / prof.problem_rate_reference
            if prof.problem_rate_reference > 0
            else (math.inf if prof.problem_rate_observed > 0 else 1.0)
        )
        lead = analysis.lead(entity)
        measurements: dict[str, float | str] = {
            "mode": analysis.comparison.kind.value,
            "problem_lines": prof.problems_observed,
            "problem_lines_reference": prof.problems_reference,
            "lines_reference": prof.lines_reference,
            "error_lines": prof.errors_observed,
            "rate_per_min": round(prof.problem_rate_observed, 3),
            "rate_per_min_reference": round(prof.problem_rate_reference, 3),
            "rate_ratio": round(ratio, 3) if math.isfinite(ratio) else "inf",
            "new_templates": len(new),
            "new_error_templates": sum(1 for t in new if t.problem),
            "burst_z": round(prof.burst_z, 3),
            "shift_z": round(prof.shift_z, 3),
            "pair_z": round(prof.pair_z, 3),
            "pair_sigma_corrected": round(analysis.pair_sigma(entity), 3),
            "inherited_units": prof.inherited_units,
            "raw_z": round(prof.raw, 3),
            "own_z": round(prof.own, 3),
            "lead": round(lead, 3) if math.isfinite(lead) else "inf",
        }
        if top is not None:
            measurements["top_template"] = short(top.template, conventions)
        if pair is not None:
            measurements["broken_pair"] = (
                f"{short(pair.first, conventions)} -> {short(pair.then, conventions)}"
            )
        if prof.blamed:
            measurements["blamed"] = prof.blamed
        return ToolResult(
            summary="; ".join(parts),
            signals={"anomaly_score": round(unrefuted(score(analysis, entity), unseen), 4)},
            measurements=measurements,
        )
