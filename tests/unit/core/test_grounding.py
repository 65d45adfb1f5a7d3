from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rca.core.evidence import Source, Verdict
from rca.core.grounding import (
    CAP_PARTIAL,
    CAP_UNGROUNDED,
    CITATION_WINDOW_AFTER_S,
    CITATION_WINDOW_BEFORE_S,
    Citation,
    Grounding,
    apply_cap,
    assemble_chain,
    cap_confidence,
    derive_grounding,
    nearest_citation,
    sanitize_confidence,
)
from rca.core.hypotheses import HypothesisTree
from rca.core.modes import Mode
from tests.unit.core.factories import ev, hyp

ONSET = 1_700_000_000.0
SHA = "3f2a9c1d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b"


def change(at: float, entity: str = "lldap", kind: str = "commit", ref: str = SHA) -> Citation:
    return Citation(kind, ref, entity, at, "change")  # type: ignore[arg-type]


def test_constants():
    assert (CAP_PARTIAL, CAP_UNGROUNDED) == (0.84, 0.64)
    assert (CITATION_WINDOW_BEFORE_S, CITATION_WINDOW_AFTER_S) == (7200.0, 300.0)


@pytest.mark.parametrize(
    ("hard", "cited", "expected"),
    [
        (True, True, Grounding.GROUNDED),
        (True, False, Grounding.PARTIALLY_GROUNDED),
        (False, True, Grounding.PARTIALLY_GROUNDED),
        (False, False, Grounding.UNGROUNDED),
    ],
)
def test_grounding_truth_table(hard, cited, expected):
    assert derive_grounding(hard, cited) is expected


@pytest.mark.parametrize(
    ("kind", "ref", "ok"),
    [
        ("commit", SHA, True),
        ("commit", "3f2a9c1", True),
        ("commit", "3f2a9c", False),
        ("commit", "HEAD", False),
        ("commit", "", False),
        ("pr", "1842", True),
        ("pr", "#1842", True),
        ("pr", "0", False),
        ("pr", SHA, False),
        ("deploy", "3F2A9C1D", True),
        ("deploy", "v1.4.2", True),
        ("deploy", "v2-fd6989b7c", True),
        ("deploy", "latest", False),
        ("deploy", "two words 2", False),
        ("commit", "v1.4.2", False),
        ("config", " 8874124 ", True),
    ],
)
def test_citation_refs_must_be_real_identifiers(kind, ref, ok):
    assert change(ONSET, kind=kind, ref=ref).verifiable is ok


def test_nearest_citation_prefers_latest_before_onset():
    changes = [change(ONSET - 3000), change(ONSET - 60, ref="aaaaaaa"), change(ONSET + 30, ref="bbbbbbb")]
    assert nearest_citation(changes, ONSET, entities=["lldap"]).ref == "aaaaaaa"


def test_nearest_citation_falls_back_to_after_onset_inside_window():
    assert nearest_citation([change(ONSET + 30)], ONSET, entities=["lldap"]).at == ONSET + 30


@pytest.mark.parametrize(
    ("at", "found"),
    [
        (ONSET - 7200, True),
        (ONSET - 7200.1, False),
        (ONSET + 300, True),
        (ONSET + 300.1, False),
        (ONSET, True),
    ],
)
def test_citation_window_is_inclusive(at, found):
    assert (nearest_citation([change(at)], ONSET, entities={"lldap"}) is not None) is found


def test_citation_never_guessed():
    assert nearest_citation([change(ONSET - 5, entity="other")], ONSET, entities={"lldap"}) is None
    assert nearest_citation([change(ONSET - 5, ref="unknown")], ONSET, entities={"lldap"}) is None
    assert nearest_citation([change(ONSET - 5)], ONSET) is None  # no entities, nothing to cite
    assert nearest_citation([], ONSET, entities={"lldap"}) is None


def test_citation_tie_broken_by_ref():
    got = nearest_citation(
        [change(ONSET - 5, ref="bbbbbbb"), change(ONSET - 5, ref="aaaaaaa")], ONSET, 10, 10, ["lldap"]
    )
    assert got.ref == "aaaaaaa"


def _tree():
    return HypothesisTree(
        (
            hyp(
                "h1",
                ev(Verdict.SUPPORTS, Source.LOGS, "h1"),
                ev(Verdict.REFUTES, Source.METRICS, "h1"),
                ev(Verdict.SUPPORTS, Source.LLM_INFERRED, "h1"),
                entity="lldap",
                prior=0.9,
            ),
            hyp("h2", ev(Verdict.SUPPORTS, Source.CHANGES, "h2"), entity="lldap", prior=0.1),
            hyp("h3", ev(Verdict.REFUTES, Source.METRICS, "h3"), entity="authelia"),
        )
    )


def test_assemble_grounded_chain_for_the_root_cause():
    tree = _tree()
    chain = assemble_chain(
        tree,
        path=("web", "authelia", "lldap"),
        changes=[change(ONSET - 60)],
        onset=ONSET,
        subscores={"pagerank": 0.4, "error_rate": 0.37},
    )
    assert chain.entity == "lldap"
    assert chain.path == ("web", "authelia", "lldap")
    assert chain.evidence == tree.get("h1").validating_evidence + tree.get("h2").validating_evidence
    assert all(e.is_hard and e.verdict is Verdict.SUPPORTS for e in chain.evidence)
    assert chain.citation is not None
    assert chain.citation.ref == SHA
    assert dict(chain.subscores) == {"pagerank": 0.4, "error_rate": 0.37}
    assert chain.grounding is Grounding.GROUNDED


def test_assemble_citation_may_touch_a_path_neighbour():
    chain = assemble_chain(
        _tree(), path=("web", "authelia", "lldap"), changes=[change(ONSET, "authelia")], onset=ONSET
    )
    assert chain.citation is not None
    assert chain.citation.entity == "authelia"


def test_assemble_for_a_named_suspect_without_proof_is_capped():
    chain = assemble_chain(
        _tree(), named_entity="authelia", changes=[change(ONSET - 1, "authelia")], onset=ONSET
    )
    assert chain.evidence == ()
    assert chain.citation is not None
    assert chain.grounding is Grounding.PARTIALLY_GROUNDED


def test_assemble_without_onset_or_winner():
    assert assemble_chain(_tree(), changes=[change(ONSET)]).grounding is Grounding.PARTIALLY_GROUNDED
    empty = assemble_chain(None, changes=[change(ONSET)], onset=ONSET)
    assert (empty.entity, empty.evidence, empty.citation) == (None, (), None)
    assert empty.grounding is Grounding.UNGROUNDED
    assert dict(empty.subscores) == {}
    no_winner = assemble_chain(HypothesisTree((hyp("x", ev(Verdict.REFUTES)),)), onset=ONSET)
    assert no_winner.entity is None
    assert no_winner.grounding is Grounding.UNGROUNDED
    named_no_tree = assemble_chain(None, named_entity="lldap", changes=[change(ONSET)], onset=ONSET)
    assert named_no_tree.grounding is Grounding.PARTIALLY_GROUNDED


@pytest.mark.parametrize(
    ("raw", "expected"), [(None, 0.0), (math.nan, 0.0), (-0.5, 0.0), (1.7, 1.0), (math.inf, 1.0), (0.5, 0.5)]
)
def test_sanitize_confidence(raw, expected):
    assert sanitize_confidence(raw) == expected


@pytest.mark.parametrize(
    ("confidence", "grounding", "expected"),
    [
        (0.99, Grounding.GROUNDED, 0.99),
        (0.99, Grounding.PARTIALLY_GROUNDED, 0.84),
        (0.99, Grounding.UNGROUNDED, 0.64),
        (0.5, Grounding.PARTIALLY_GROUNDED, 0.5),
        (0.5, Grounding.UNGROUNDED, 0.5),
        (math.nan, Grounding.GROUNDED, 0.0),
    ],
)
def test_cap_confidence(confidence, grounding, expected):
    assert cap_confidence(confidence, grounding) == expected


unit = st.floats(0.0, 1.0)
groundings = st.sampled_from(list(Grounding))


@settings(max_examples=500)
@given(unit, groundings)
def test_cap_never_raises_and_stays_below_the_tiers(confidence, grounding):
    capped = cap_confidence(confidence, grounding)
    assert capped <= confidence
    if grounding is Grounding.UNGROUNDED:
        assert capped < 0.65
    elif grounding is Grounding.PARTIALLY_GROUNDED:
        assert capped < 0.85
    else:
        assert capped == confidence


@settings(max_examples=300)
@given(st.floats(allow_nan=True, allow_infinity=True) | st.none(), groundings)
def test_cap_is_total_and_in_range(confidence, grounding):
    assert 0.0 <= cap_confidence(confidence, grounding) <= 1.0


def test_apply_cap_records_both_and_mode_picks_the_governing_value():
    shadow = apply_cap(0.97, Grounding.UNGROUNDED, Mode.SHADOW)
    active = apply_cap(0.97, Grounding.UNGROUNDED, Mode.ACTIVE)
    assert (shadow.raw, shadow.capped, shadow.governing) == (0.97, 0.64, 0.97)
    assert (active.raw, active.capped, active.governing) == (0.97, 0.64, 0.64)
    assert apply_cap(math.nan, Grounding.GROUNDED, Mode.SHADOW).governing == 0.0
