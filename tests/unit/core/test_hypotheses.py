from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rca.core.evidence import STRUCTURAL_SOURCES, EvidenceSink, Source, Verdict
from rca.core.hypotheses import Conclusion, Hypothesis, HypothesisState, HypothesisTree, derive_state
from tests.unit.core.factories import ev, hyp

V, IN, INC = HypothesisState.VALIDATED, HypothesisState.INVALIDATED, HypothesisState.INCONCLUSIVE
S, R, U = Verdict.SUPPORTS, Verdict.REFUTES, Verdict.INCONCLUSIVE
LLM = Source.LLM_INFERRED


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], INC),
        ([ev(U), ev(U), ev(U)], INC),
        ([ev(S, LLM)], INC),
        ([ev(S, Source.LOGS), ev(R, Source.METRICS)], V),  # hard support dominates refutation
        ([ev(R, Source.METRICS), ev(S, Source.LOGS)], V),  # order does not matter
        ([ev(R, Source.TRACES)], IN),
        ([ev(R, LLM)], IN),  # documented asymmetry: the model can downgrade, never upgrade
        ([ev(S, LLM), ev(R, Source.LOGS)], IN),
        ([ev(S, LLM), ev(U)], INC),
        ([ev(S, Source.CHANGES)], V),
    ],
)
def test_derive_state(items, expected):
    assert derive_state(items) is expected


sources = st.sampled_from(list(Source))
verdicts = st.sampled_from(list(Verdict))


@settings(max_examples=300)
@given(st.lists(verdicts, max_size=20))
def test_llm_inferred_evidence_never_validates(verdict_list):
    items = [ev(v, LLM) for v in verdict_list]
    assert derive_state(items) is not V
    sink = EvidenceSink()
    for item in items:
        sink.record(item)
    tree = HypothesisTree.snapshot([hyp("h1")], sink)
    assert tree.validated == ()
    assert tree.conclusion is Conclusion.NO_CONFIDENT_ROOT_CAUSE


@settings(max_examples=300)
@given(st.lists(st.tuples(verdicts, sources), max_size=20), st.randoms(use_true_random=False))
def test_state_depends_only_on_the_two_booleans(pairs, rnd):
    items = [ev(v, s) for v, s in pairs]
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert derive_state(items) is derive_state(shuffled)
    # Hard support from a behavioural lane: a structural lane (topology) never validates.
    hard_support = any(v is S and s is not LLM and s not in STRUCTURAL_SOURCES for v, s in pairs)
    assert (derive_state(items) is V) is hard_support


@settings(max_examples=200)
@given(
    st.lists(st.tuples(verdicts, sources), max_size=10), st.lists(st.tuples(verdicts, sources), max_size=10)
)
def test_validation_is_monotonic_under_appending(first, more):
    before = derive_state([ev(v, s) for v, s in first])
    after = derive_state([ev(v, s) for v, s in first + more])
    if before is V:
        assert after is V


def test_hypothesis_state_and_validating_evidence():
    proof = ev(S, Source.LOGS)
    h = hyp("h1", ev(S, LLM), ev(R), proof)
    assert h.state is V
    assert h.validating_evidence == (proof,)


def test_snapshot_binds_sink_evidence_and_is_immutable():
    sink = EvidenceSink()
    sink.record(ev(S, Source.METRICS, "a"))
    sink.record(ev(R, Source.LOGS, "b"))
    sink.record(ev(S, LLM, "c"))  # refused at the door
    template = [hyp("a", entity="lldap"), hyp("b", ev(S), entity="authelia"), hyp("c", entity="web")]
    tree = HypothesisTree.snapshot(template, sink)
    assert [h.state for h in tree.hypotheses] == [V, IN, INC]  # "b" lost its template evidence
    assert tree.validated == (tree.hypotheses[0],)
    assert tree.conclusion is Conclusion.VALIDATED
    assert tree.root_cause is not None
    assert tree.root_cause.entity == "lldap"
    assert tree.get("b") is tree.hypotheses[1]
    assert tree.get("zzz") is None
    sink.record(ev(S, Source.LOGS, "c"))
    assert tree.get("c").state is INC  # the snapshot does not move
    assert HypothesisTree.snapshot(template, sink).get("c").state is V


def test_empty_tree_concludes_no_confident_root_cause():
    tree = HypothesisTree()
    assert tree.validated == ()
    assert tree.root_cause is None
    assert tree.conclusion is Conclusion.NO_CONFIDENT_ROOT_CAUSE


def test_duplicate_ids_are_rejected():
    with pytest.raises(ValueError, match="unique"):
        HypothesisTree((hyp("a"), hyp("a")))


def test_root_cause_rule_for_several_validated():
    low = hyp("a", ev(S), prior=0.2)
    high = hyp("b", ev(S), prior=0.9)
    assert HypothesisTree((low, high)).root_cause is high  # highest seed score
    one = hyp("c", ev(S), prior=0.5)
    two = hyp("d", ev(S), ev(S, Source.LOGS), prior=0.5)
    assert HypothesisTree((one, two)).root_cause is two  # then most hard supports
    late = hyp("e", ev(S, at=200.0), prior=0.5)
    early = hyp("f", ev(S, at=100.0), prior=0.5)
    assert HypothesisTree((late, early)).root_cause is early  # then earliest proof
    x, y = hyp("y", ev(S)), hyp("x", ev(S))
    assert HypothesisTree((x, y)).root_cause is y  # then smallest id
    refuted = hyp("z", ev(R), prior=1.0)
    assert HypothesisTree((refuted, low)).root_cause is low  # only validated ones compete


def test_children_do_not_roll_up():
    parent = Hypothesis("p", "checkout", "error_spike")
    child = Hypothesis("c", "checkout", "bad_config", parent_id="p", evidence=(ev(S, hypothesis_id="c"),))
    tree = HypothesisTree((parent, child))
    assert parent.state is INC
    assert child.state is V
    assert tree.validated == (child,)
