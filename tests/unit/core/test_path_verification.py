"""Forward verification of propagation hops: structural, statistical and temporal rules."""

from __future__ import annotations

import pytest

from rca.core.path_verification import Check, HopVerification, Observation, Rule, verified_rate, verify_hop

DEVIATES_AT_100 = Observation(deviates=True, onset=100.0, resolution_s=60.0)


def test_a_hop_passing_all_three_rules_is_verified() -> None:
    hop = verify_hop(True, DEVIATES_AT_100, Observation(True, onset=160.0, resolution_s=60.0))
    assert hop.verified
    assert hop.failed() == ()
    assert hop.to_dict() == {
        "verified": True,
        "rules": {"structural": "pass", "statistical": "pass", "temporal": "pass"},
        "failed": [],
    }


def test_no_edge_fails_the_structural_rule() -> None:
    hop = verify_hop(False, DEVIATES_AT_100, DEVIATES_AT_100)
    assert not hop.verified
    assert hop.failed() == (Rule.STRUCTURAL,)


@pytest.mark.parametrize(
    ("cause", "effect", "expected"),
    [
        (Observation(False, 100.0), Observation(True, 100.0), Check.FAIL),
        (Observation(True, 100.0), Observation(False, 100.0), Check.FAIL),
        (Observation(None, 100.0), Observation(False, 100.0), Check.FAIL),  # a known failure wins
        (Observation(None, 100.0), Observation(True, 100.0), Check.UNKNOWN),
        (Observation(True, 100.0), Observation(None, 100.0), Check.UNKNOWN),
    ],
)
def test_both_ends_must_deviate(cause: Observation, effect: Observation, expected: Check) -> None:
    hop = verify_hop(True, cause, effect)
    assert hop.statistical is expected
    assert not hop.verified
    assert Rule.STATISTICAL in hop.failed()


def test_the_effect_may_not_start_before_its_cause_beyond_one_sample() -> None:
    one_sample_early = Observation(True, onset=40.0, resolution_s=60.0)
    assert verify_hop(True, DEVIATES_AT_100, one_sample_early).temporal is Check.PASS
    much_earlier = Observation(True, onset=30.0, resolution_s=10.0)
    cause = Observation(True, onset=100.0, resolution_s=10.0)
    hop = verify_hop(True, cause, much_earlier)
    assert hop.temporal is Check.FAIL
    assert hop.failed() == (Rule.TEMPORAL,)


def test_an_unknown_onset_leaves_the_hop_unverified() -> None:
    hop = verify_hop(True, Observation(True, onset=None), DEVIATES_AT_100)
    assert hop.temporal is Check.UNKNOWN
    assert hop.to_dict()["failed"] == ["temporal"]
    assert not verify_hop(True, DEVIATES_AT_100, Observation(True)).verified


def test_verified_rate_is_the_share_of_hops_passing_everything() -> None:
    good = HopVerification(Check.PASS, Check.PASS, Check.PASS)
    bad = HopVerification(Check.PASS, Check.UNKNOWN, Check.PASS)
    assert verified_rate([good, bad, good, good]) == 0.75
    assert verified_rate([]) is None
