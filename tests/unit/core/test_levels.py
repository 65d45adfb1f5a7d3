"""Hypothesis levels: drill-down and backtracking on constructed evidence sequences."""

from __future__ import annotations

import math

import pytest

from rca.core.evidence import Evidence, Source, Verdict
from rca.core.hypotheses import Hypothesis, HypothesisTree
from rca.core.levels import (
    Level,
    LevelSettings,
    backtrack,
    children,
    detail_parts,
    drill_target,
    leader,
    level_of,
    ranked,
    refined,
    root_of,
    standing,
    subtree,
)


def _ev(hid: str, verdict: Verdict, source: Source = Source.METRICS, at: float = 100.0) -> Evidence:
    return Evidence("metrics", hid, f"{verdict} for {hid}", verdict, source, at)


class Run:
    """An investigation's tree as evidence arrives, one item at a time."""

    def __init__(self) -> None:
        self.hypotheses: dict[str, Hypothesis] = {}
        self.evidence: dict[str, list[Evidence]] = {}

    def add(
        self, hid: str, entity: str, kind: str = "cpu", parent: str | None = None, prior: float = 0.0
    ) -> None:
        self.hypotheses[hid] = Hypothesis(hid, entity, kind, parent, (), prior)

    def observe(self, hid: str, verdict: Verdict, source: Source = Source.METRICS) -> None:
        self.evidence.setdefault(hid, []).append(_ev(hid, verdict, source))

    @property
    def tree(self) -> HypothesisTree:
        return HypothesisTree(
            tuple(
                Hypothesis(
                    h.id, h.entity, h.fault_kind, h.parent_id, tuple(self.evidence.get(h.id, ())), h.prior
                )
                for h in self.hypotheses.values()
            )
        )


def test_levels_are_depths_along_the_parents_in_the_tree() -> None:
    run = Run()
    run.add("a", "checkout")
    run.add("a/cpu", "checkout", parent="a")
    run.add("a/cpu/pod-1", "checkout", parent="a/cpu")
    run.add("a/cpu/pod-1/x", "checkout", parent="a/cpu/pod-1")
    run.add("orphan", "cart", parent="gone")
    tree = run.tree
    levels = {h.id: level_of(tree, h) for h in tree.hypotheses}
    assert levels == {
        "a": Level.SERVICE,
        "a/cpu": Level.FAULT_KIND,
        "a/cpu/pod-1": Level.DETAIL,
        "a/cpu/pod-1/x": Level.DETAIL,  # nothing lies below a detail
        "orphan": Level.SERVICE,  # its parent is not in the tree
    }
    assert root_of(tree, tree.hypotheses[2]).id == "a"
    assert root_of(tree, tree.hypotheses[4]).id == "orphan"
    assert [h.id for h in children(tree, None)] == ["a", "orphan"]


def test_standing_counts_hard_support_and_refutation_and_the_prior_only_breaks_ties() -> None:
    run = Run()
    run.add("a", "checkout", prior=1000.0)
    run.add("b", "cart", prior=0.1)
    run.observe("b", Verdict.SUPPORTS)
    run.observe("b", Verdict.SUPPORTS, Source.LLM_INFERRED)  # soft: the model's word is no proof
    tree = run.tree
    a, b = tree.hypotheses
    assert standing(tree, a) < 1.0 < standing(tree, b) < 2.0
    run.observe("b", Verdict.REFUTES)
    assert standing(run.tree, run.tree.hypotheses[1]) == pytest.approx(0.1 / 1.1)
    weighted = LevelSettings(support_weight=2.0, refute_weight=0.5)
    assert standing(run.tree, run.tree.hypotheses[1], weighted) == pytest.approx(1.5 + 0.1 / 1.1)


@pytest.mark.parametrize(("prior", "share"), [(0.0, 0.0), (-3.0, 0.0), (math.nan, 0.0), (1.0, 0.5)])
def test_the_prior_share_is_bounded(prior: float, share: float) -> None:
    tree = HypothesisTree((Hypothesis("a", "checkout", "cpu", prior=prior),))
    assert standing(tree, tree.hypotheses[0]) == pytest.approx(share)


def test_an_infinite_prior_still_counts_less_than_one_item_of_evidence() -> None:
    tree = HypothesisTree((Hypothesis("a", "checkout", "cpu", prior=math.inf),))
    assert 0.99 < standing(tree, tree.hypotheses[0]) < 1.0


def test_no_drill_without_hard_support_or_without_a_clear_lead() -> None:
    run = Run()
    assert drill_target(run.tree, None) is None  # an empty level
    run.add("a", "checkout", prior=2.0)
    run.add("b", "cart", prior=1.0)
    assert drill_target(run.tree, None) is None  # nothing proven yet
    run.observe("a", Verdict.SUPPORTS)
    run.observe("b", Verdict.SUPPORTS)
    assert drill_target(run.tree, None) is None  # both proven: a leads by its prior only
    run.observe("b", Verdict.REFUTES)
    top = drill_target(run.tree, None)
    assert top is not None
    assert top.id == "a"
    assert drill_target(run.tree, None, LevelSettings(drill_margin=5.0)) is None


def test_a_lone_proven_hypothesis_leads_its_level() -> None:
    run = Run()
    run.add("a", "checkout")
    run.observe("a", Verdict.SUPPORTS)
    assert leader(run.tree, None) is not None


def test_drill_down_service_then_kind_then_detail() -> None:
    run = Run()
    run.add("checkout", "checkout", prior=3.0)
    run.add("cart", "cart", prior=1.0)
    run.observe("checkout", Verdict.SUPPORTS)
    focus: list[str] = []
    target = drill_target(run.tree, None)
    assert target is not None
    assert target.id == "checkout"
    focus.append(target.id)
    run.add("checkout/cpu", "checkout", "cpu", parent="checkout", prior=3.0)
    run.add("checkout/memory", "checkout", "memory", parent="checkout", prior=3.0)
    run.observe("checkout/cpu", Verdict.SUPPORTS)
    run.observe("checkout/memory", Verdict.REFUTES)
    kind = drill_target(run.tree, focus[-1])
    assert kind is not None
    assert kind.id == "checkout/cpu"
    focus.append(kind.id)
    run.add("checkout/cpu/pod-1", "checkout", "cpu", parent="checkout/cpu", prior=3.0)
    run.add("checkout/cpu/pod-2", "checkout", "cpu", parent="checkout/cpu", prior=3.0)
    run.observe("checkout/cpu/pod-1", Verdict.SUPPORTS)
    run.observe("checkout/cpu/pod-2", Verdict.REFUTES)
    tree = run.tree
    assert leader(tree, focus[-1]) is not None
    assert drill_target(tree, focus[-1]) is None  # nothing lies below a detail
    assert backtrack(tree, focus) is None
    assert refined(tree, tree.hypotheses[0]).id == "checkout/cpu/pod-1"
    assert refined(tree, tree.hypotheses[1]).id == "cart"  # nothing proven below it


def test_late_evidence_demotes_the_first_service_and_the_tree_backtracks() -> None:
    run = Run()
    run.add("checkout", "checkout", prior=3.0)
    run.add("payment", "payment", prior=2.0)
    run.observe("checkout", Verdict.SUPPORTS)
    focus = ["checkout"]
    run.add("checkout/cpu", "checkout", "cpu", parent="checkout", prior=3.0)
    run.observe("checkout/cpu", Verdict.SUPPORTS)
    focus.append("checkout/cpu")
    assert backtrack(run.tree, focus) is None
    # Late evidence: two lanes prove payment, and the traces refute checkout's own share.
    run.observe("payment", Verdict.SUPPORTS, Source.LOGS)
    run.observe("payment", Verdict.SUPPORTS, Source.TRACES)
    run.observe("checkout", Verdict.REFUTES, Source.TRACES)
    back = backtrack(run.tree, focus)
    assert back is not None
    assert (back.depth, back.demoted, back.overtaken_by, back.pruned) == (
        0,
        "checkout",
        "payment",
        ("checkout/cpu",),
    )
    focus = focus[: back.depth]
    target = drill_target(run.tree, None)
    assert target is not None
    assert target.id == "payment"


def test_a_kind_whose_details_were_all_refuted_yields_to_its_sibling() -> None:
    run = Run()
    run.add("checkout", "checkout", prior=3.0)
    run.observe("checkout", Verdict.SUPPORTS)
    run.add("checkout/cpu", "checkout", "cpu", parent="checkout", prior=3.0)
    run.add("checkout/latency", "checkout", "latency", parent="checkout", prior=3.0)
    run.add("checkout/errors", "checkout", "errors", parent="checkout", prior=3.0)  # never examined
    run.observe("checkout/cpu", Verdict.SUPPORTS)
    run.observe("checkout/cpu", Verdict.SUPPORTS, Source.CHANGES)
    run.observe("checkout/latency", Verdict.SUPPORTS)
    focus = ["checkout", "checkout/cpu"]
    run.add("checkout/cpu/pod-1", "checkout", "cpu", parent="checkout/cpu", prior=3.0)
    run.add("checkout/cpu/pod-2", "checkout", "cpu", parent="checkout/cpu", prior=3.0)
    run.observe("checkout/cpu/pod-1", Verdict.REFUTES)
    run.observe("checkout/cpu/pod-2", Verdict.REFUTES)
    back = backtrack(run.tree, focus)
    assert back is not None
    assert (back.depth, back.overtaken_by) == (1, "checkout/latency")
    assert back.pruned == ("checkout/cpu/pod-1", "checkout/cpu/pod-2")


def test_a_focus_entry_no_longer_in_the_tree_is_skipped() -> None:
    run = Run()
    run.add("a", "checkout")
    run.observe("a", Verdict.SUPPORTS)
    assert backtrack(run.tree, ["gone", "a"]) is None


def test_subtree_and_the_tree_walks_survive_malformed_parent_links() -> None:
    loop = HypothesisTree(
        (
            Hypothesis("a", "checkout", "cpu", parent_id="b"),
            Hypothesis("b", "checkout", "cpu", parent_id="a"),
            Hypothesis("self", "cart", "cpu", parent_id="self"),
        )
    )
    a, _, own = loop.hypotheses
    assert subtree(loop, "a") == ("b",)
    assert subtree(loop, "self") == ()
    assert level_of(loop, a) == Level.FAULT_KIND  # a -> b, then the walk stops at the repeat
    assert root_of(loop, a).id == "b"
    assert root_of(loop, own).id == "self"
    assert ranked(loop, None) == []
    assert refined(loop, own).id == "self"


def test_refined_stops_where_a_leader_repeats() -> None:
    own = Hypothesis("self", "cart", "cpu", parent_id="self", evidence=(_ev("self", Verdict.SUPPORTS),))
    assert refined(HypothesisTree((own,)), own).id == "self"


@pytest.mark.parametrize(
    ("detail", "parts"),
    [
        ("instance:pod-1", ("instance", "pod-1")),
        ("change:v2:rc1", ("change", "v2:rc1")),
        ("", ("", "")),
        ("pod", ("", "")),
        (":x", ("", "")),
    ],
)
def test_detail_parts(detail: str, parts: tuple[str, str]) -> None:
    assert detail_parts(Hypothesis("h", "checkout", "cpu", detail=detail)) == parts
