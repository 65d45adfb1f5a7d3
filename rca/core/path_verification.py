"""Forward verification of a propagation path, hop by hop (PAVE's three checks, run on one incident).

A hop `cause -> effect` claims that the cause's fault reached the effect. It is verified only when all
three rules hold at once:

- structural: the dependency graph has the edge (the effect calls the cause, or the cause calls the
  effect for a fault that travels against the call direction, which the caller decides);
- statistical: both ends deviate from their own baseline;
- temporal: the effect's deviation does not start before the cause's (within the telemetry's
  resolution: change points on sampled series are only known to a sample).

A rule that can't be checked (no onset was found, the entity reports no metrics) is `unknown`, and an
unknown rule does not verify a hop either: the hop is kept, marked unverified, with the rules it failed
or could not check. Without a known intervention this grades the explanation; it does not prove it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Rule(StrEnum):
    """The three checks a hop must pass."""

    STRUCTURAL = "structural"
    STATISTICAL = "statistical"
    TEMPORAL = "temporal"


class Check(StrEnum):
    """One rule's result."""

    PASS = "pass"  # noqa: S105 (a result, not a password)
    FAIL = "fail"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Observation:
    """What the telemetry says about one entity: did it deviate, and from when.

    `deviates` is None when the entity has no measurement to judge; `onset` is None when no start of
    the deviation was found; `resolution_s` is the sampling step of the series the onset came from;
    `z` is how far its strongest deviating measurement sits from its baseline, in baseline spreads.
    """

    deviates: bool | None
    onset: float | None = None
    resolution_s: float = 0.0
    z: float = 0.0


@dataclass(frozen=True, slots=True)
class HopVerification:
    """The three rules' results for one hop."""

    structural: Check
    statistical: Check
    temporal: Check

    @property
    def verified(self) -> bool:
        """Whether every rule passed."""
        return all(c is Check.PASS for c in self.checks().values())

    def checks(self) -> dict[Rule, Check]:
        """Rule -> result, in the rules' order."""
        return {
            Rule.STRUCTURAL: self.structural,
            Rule.STATISTICAL: self.statistical,
            Rule.TEMPORAL: self.temporal,
        }

    def failed(self) -> tuple[Rule, ...]:
        """The rules that did not pass (failed or could not be checked)."""
        return tuple(rule for rule, check in self.checks().items() if check is not Check.PASS)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form: each rule's result, `verified`, and the rules that did not pass."""
        return {
            "verified": self.verified,
            "rules": {rule.value: check.value for rule, check in self.checks().items()},
            "failed": [rule.value for rule in self.failed()],
        }


def _statistical(cause: Observation, effect: Observation) -> Check:
    if cause.deviates is False or effect.deviates is False:
        return Check.FAIL
    if cause.deviates is None or effect.deviates is None:
        return Check.UNKNOWN
    return Check.PASS


def _temporal(cause: Observation, effect: Observation) -> Check:
    if cause.onset is None or effect.onset is None:
        return Check.UNKNOWN
    tolerance = max(cause.resolution_s, effect.resolution_s, 0.0)
    return Check.PASS if effect.onset >= cause.onset - tolerance else Check.FAIL


def verify_hop(edge: bool, cause: Observation, effect: Observation) -> HopVerification:
    """Check one hop `cause -> effect`; `edge` says whether the dependency graph joins the two."""
    return HopVerification(
        structural=Check.PASS if edge else Check.FAIL,
        statistical=_statistical(cause, effect),
        temporal=_temporal(cause, effect),
    )


def verified_rate(hops: Iterable[HopVerification]) -> float | None:
    """The share of hops that pass all three rules (None for no hops: nothing to grade)."""
    checked = list(hops)
    if not checked:
        return None
    return sum(h.verified for h in checked) / len(checked)
