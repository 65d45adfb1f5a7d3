"""Incident memory in Qdrant local mode: paraphrase search, filters, idempotent re-index, delete, recall."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

import pytest
from qdrant_client.models import VectorParams

from rca.incidents.models import Evidence, Hypothesis, Investigation
from rca.memory import index
from rca.memory.documents import IncidentDocument, document_for
from rca.memory.index import IncidentMemory, SearchFilters, point_id
from rca.memory.store import get_client
from tests.integration.memory.factories import ONSET, make_incident

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def corpus() -> list[IncidentDocument]:
    """A target incident and distractors, from real rows."""
    rows = [
        make_incident(
            "checkout latency rose after payment service CPU saturation",
            symptom="checkout",
            root="payment",
            kind="cpu_saturation",
            path=["payment", "checkout"],
            tier="patch",
            onset=ONSET,
            evidence=["payment CPU at 99% of its limit", "checkout p99 latency 5x baseline"],
        ),
        make_incident(
            "inventory database disk filled up and writes failed",
            symptom="inventory",
            root="inventory-db",
            kind="disk_full",
            path=["inventory-db", "inventory"],
            tier="issue",
            onset=ONSET + timedelta(days=10),
            evidence=["disk usage on inventory-db volume at 100%"],
        ),
        make_incident(
            "login failures after the auth certificate expired",
            symptom="frontend",
            root="auth",
            kind="certificate_expiry",
            path=["auth", "frontend"],
            tier="pull_request",
            onset=ONSET + timedelta(days=20),
            evidence=["TLS handshake errors: certificate has expired"],
        ),
        make_incident(
            "recommendation pods OOM-killed by a memory leak",
            symptom="frontend",
            root="recommendation",
            kind="memory_leak",
            path=["recommendation", "frontend"],
            tier="issue",
            onset=ONSET + timedelta(days=30),
            evidence=["recommendation memory grew 40 MiB per minute until OOMKilled"],
        ),
        make_incident(
            "cart errors with no clear cause",
            symptom="cart",
            confident=False,
            onset=ONSET + timedelta(days=40),
        ),
    ]
    return [document_for(inc, inv) for inc, inv in rows]


def ids(hits: list[index.Hit]) -> list[int]:
    return [h.incident_id for h in hits]


def test_paraphrased_query_finds_the_incident_through_the_process_wide_memory() -> None:
    docs = corpus()
    target = docs[0]
    try:
        for doc in docs:
            index.upsert(doc)
        hits = index.search("slow checkout caused by payment cpu", limit=3)
        assert hits[0].incident_id == target.incident_id
        assert hits[0].document == target
        assert all(hits[0].score > h.score for h in hits[1:])
        assert (
            index.search("storage ran out of space on the stock database")[0].incident_id
            == docs[1].incident_id
        )
    finally:
        for doc in docs:
            index.delete(doc.incident_id)


def test_gibberish_finds_no_similar_incident_but_a_paraphrase_still_does(mem: IncidentMemory) -> None:
    docs = corpus()
    for doc in docs:
        mem.upsert(doc)
    for nonsense in ("qwxz vbnmlk ptrs", "asdfghjkl", "zzkq plorb"):
        assert mem.search(nonsense) == [], nonsense
    hits = mem.search("slow checkout caused by payment cpu")
    assert ids(hits)[0] == docs[0].incident_id
    assert all(h.score >= index.SEARCH_MIN_SIMILARITY for h in hits)


def test_collection_is_created_with_the_model_shape(mem: IncidentMemory) -> None:
    mem.ensure_collection()
    params = mem.client.get_collection(mem.collection).config.params.vectors
    assert isinstance(params, VectorParams)
    assert params.size == 384
    assert params.distance == "Cosine"
    assert mem.count() == 0


def test_filters(mem: IncidentMemory) -> None:
    docs = corpus()
    mem.upsert_many(docs)
    payment, inventory, auth, recommendation, cart = (d.incident_id for d in docs)
    query = "service incident"

    def found(filters: SearchFilters) -> set[int]:
        # Every incident the filters let through, however unlike the text: the filters are under test.
        return set(ids(mem.search(query, filters, limit=10, floor=-1.0)))

    assert found(SearchFilters()) == {payment, inventory, auth, recommendation, cart}
    # service: any involved service, not only the root cause
    assert found(SearchFilters(service="frontend")) == {auth, recommendation}
    assert found(SearchFilters(service="payment")) == {payment}
    assert found(SearchFilters(service=["checkout", "inventory-db"])) == {payment, inventory}
    assert found(SearchFilters(fault_kind="disk_full")) == {inventory}
    assert found(SearchFilters(fault_kind=["memory_leak", "certificate_expiry"])) == {auth, recommendation}
    assert found(SearchFilters(tier="issue")) == {inventory, recommendation}
    assert found(SearchFilters(tier=["patch", "pull_request"])) == {payment, auth}
    assert found(SearchFilters(exit="no_confident_root_cause")) == {cart}
    assert found(SearchFilters(symptom="frontend")) == {auth, recommendation}
    # time: since inclusive, until exclusive
    assert found(SearchFilters(since=ONSET + timedelta(days=10))) == {inventory, auth, recommendation, cart}
    assert found(SearchFilters(until=ONSET + timedelta(days=10))) == {payment}
    window = SearchFilters(since=ONSET + timedelta(days=5), until=ONSET + timedelta(days=25))
    assert found(window) == {inventory, auth}
    # combined (AND), and nothing matching
    assert found(SearchFilters(service="frontend", tier="issue")) == {recommendation}
    assert found(SearchFilters(service="frontend", since=ONSET + timedelta(days=25))) == {recommendation}
    assert found(SearchFilters(service="nowhere")) == set()
    assert found(SearchFilters(fault_kind="disk_full", tier="patch")) == set()
    assert found(SearchFilters(exclude_incident=payment)) == {inventory, auth, recommendation, cart}


def test_filters_are_qdrant_filters() -> None:
    f = SearchFilters(service=["a", "b"], fault_kind="cpu", since=ONSET, until=ONSET + timedelta(hours=1))
    qf = f.to_qdrant()
    assert qf is not None
    kinds = {type(c.match).__name__ if c.match else "Range" for c in qf.must}  # type: ignore[union-attr]
    assert kinds == {"MatchAny", "MatchValue", "Range"}
    assert SearchFilters().to_qdrant() is None


def test_reindex_replaces_the_point(mem: IncidentMemory) -> None:
    incident, investigation = make_incident(
        "checkout slow",
        symptom="checkout",
        root="payment",
        kind="cpu_saturation",
        path=["payment", "checkout"],
    )
    first = document_for(incident, investigation)
    assert mem.upsert(first) == point_id(incident.pk)
    assert mem.upsert(first) == point_id(incident.pk)  # a redelivered task
    assert mem.count() == 1

    # A later investigation concludes differently: re-indexing replaces, never adds.
    investigation.root_cause_entity = "cart"
    investigation.root_cause_kind = "network_delay"
    investigation.save()
    mem.upsert(document_for(incident, investigation))
    assert mem.count() == 1
    stored = mem.get(incident.pk)
    assert stored is not None
    assert stored.root_cause_entity == "cart"
    assert ids(mem.search("checkout", SearchFilters(fault_kind="cpu_saturation"))) == []
    assert ids(mem.search("checkout", SearchFilters(fault_kind="network_delay"))) == [incident.pk]
    assert ids(mem.search("checkout", SearchFilters(service="payment"))) == [incident.pk]  # still on the path


def test_delete(mem: IncidentMemory) -> None:
    docs = corpus()
    mem.upsert_many(docs)
    mem.delete(docs[0].incident_id)
    mem.delete(docs[0].incident_id)  # deleting twice is fine
    mem.delete(10**9)  # never stored: fine
    assert mem.count() == len(docs) - 1
    assert mem.get(docs[0].incident_id) is None
    assert docs[0].incident_id not in ids(mem.search("slow checkout caused by payment cpu"))


def test_a_new_process_sees_what_was_stored(mem: IncidentMemory) -> None:
    docs = corpus()
    mem.upsert_many(docs)
    mem.delete(docs[1].incident_id)
    reopened = IncidentMemory(mem.client, collection=mem.collection, embedder=mem.embedder, local_index=True)
    assert ids(reopened.search("slow checkout caused by payment cpu", limit=1)) == [docs[0].incident_id]
    assert ids(reopened.search("x", SearchFilters(fault_kind="disk_full"))) == []
    everything = reopened.search("x", limit=10, floor=-1.0)
    assert set(ids(everything)) == {d.incident_id for d in docs} - {docs[1].incident_id}


def test_mirror_and_qdrant_filters_agree(embedder) -> None:  # type: ignore[no-untyped-def]
    """The numpy mirror local mode searches with ranks exactly as Qdrant's own filtered query."""
    rng = random.Random(3)
    services = ["checkout", "payment", "cart", "auth", "frontend", "inventory"]
    kinds = ["cpu_saturation", "memory_leak", "disk_full", "network_delay"]
    docs = []
    for i in range(150):
        root, symptom = rng.sample(services, 2)
        docs.append(
            IncidentDocument(
                incident_id=900_000 + i,
                title=f"{symptom} degraded",
                symptom_entity=symptom,
                services=(root, symptom),
                root_cause_entity=root,
                fault_kind=rng.choice(kinds),
                tier=rng.choice(["notify", "issue", "patch", "pull_request"]),
                exit="confident",
                evidence=(f"{root} misbehaving {i}",),
                onset=ONSET + timedelta(hours=i),
            )
        )
    client = get_client()
    name = "test_memory_agree"
    by_mirror = IncidentMemory(client, collection=name, embedder=embedder, local_index=True)
    by_qdrant = IncidentMemory(client, collection=name, embedder=embedder, local_index=False)
    try:
        by_mirror.upsert_many(docs)
        by_qdrant.ensure_collection()
        for _ in range(25):
            filters = SearchFilters(
                service=rng.choice([None, rng.choice(services), rng.sample(services, 2)]),
                fault_kind=rng.choice([None, rng.choice(kinds)]),
                tier=rng.choice([None, "issue", ["patch", "pull_request"]]),
                since=rng.choice([None, ONSET + timedelta(hours=40)]),
                until=rng.choice([None, ONSET + timedelta(hours=120)]),
            )
            query = f"{rng.choice(services)} {rng.choice(kinds).replace('_', ' ')}"
            a = by_mirror.search(query, filters, limit=7)
            b = by_qdrant.search(query, filters, limit=7)
            assert ids(a) == ids(b), filters
            assert [round(h.score, 4) for h in a] == [round(h.score, 4) for h in b]
    finally:
        client.delete_collection(name)


def test_recall_returns_priors_keyed_by_service_and_nothing_else(mem: IncidentMemory) -> None:
    docs = corpus()
    mem.upsert_many(docs)
    before = (Evidence.objects.count(), Hypothesis.objects.count(), list(Investigation.objects.values()))

    priors = mem.recall("checkout latency is high, payments look slow", symptom="checkout")

    assert type(priors) is dict
    assert priors, "a near-identical past incident must yield a prior"
    assert all(type(k) is str and type(v) is float for k, v in priors.items())
    assert all(0.0 < v <= 1.0 for v in priors.values())
    assert set(priors) <= {d.root_cause_entity for d in docs if d.confident}  # services only
    assert max(priors, key=priors.__getitem__) == "payment"
    # Recall is never evidence: it writes nothing and changes nothing.
    after = (Evidence.objects.count(), Hypothesis.objects.count(), list(Investigation.objects.values()))
    assert after == before


def test_recall_ignores_unproven_incidents_and_the_incident_itself(mem: IncidentMemory) -> None:
    docs = corpus()
    mem.upsert_many(docs)
    priors = mem.recall("cart errors with no clear cause", symptom="cart")
    assert "" not in priors  # the unproven incident names no service
    assert "cart" not in priors
    payment = docs[0]
    without_self = mem.recall(payment.title, symptom="checkout", exclude_incident=payment.incident_id)
    with_self = mem.recall(payment.title, symptom="checkout")
    assert with_self["payment"] > without_self.get("payment", 0.0)


def test_recall_on_an_empty_memory(mem: IncidentMemory) -> None:
    assert mem.recall("anything at all", symptom="checkout") == {}


def test_recall_weighs_a_different_symptom_less(mem: IncidentMemory) -> None:
    (doc,) = corpus()[:1]
    mem.upsert(doc)
    same = mem.recall(doc.text(), symptom="checkout")["payment"]
    other = mem.recall(doc.text(), symptom="frontend").get("payment", 0.0)
    assert same > other
    assert same == pytest.approx(1.0, abs=0.05)  # the very same text


def test_module_level_recall_uses_the_process_wide_memory() -> None:
    doc = replace(corpus()[0])
    try:
        index.upsert(doc)
        priors = index.recall("slow checkout caused by payment cpu", symptom="checkout")
        assert "payment" in priors
    finally:
        index.delete(doc.incident_id)


def test_index_incident_uses_the_latest_succeeded_investigation() -> None:
    incident, first = make_incident(
        "checkout slow",
        symptom="checkout",
        root="payment",
        kind="cpu_saturation",
        path=["payment", "checkout"],
    )
    first.finished_at = ONSET + timedelta(minutes=5)
    first.save()
    Investigation.objects.create(
        incident=incident,
        attempt_key=f"{incident.pk}:2",
        status=Investigation.Status.SUCCEEDED,
        finished_at=ONSET + timedelta(minutes=30),
        exit="confident",
        tier="issue",
        root_cause_entity="cart",
        root_cause_kind="network_delay",
    )
    Investigation.objects.create(incident=incident, attempt_key=f"{incident.pk}:3", status="failed")
    incident_id = incident.pk
    try:
        assert index.index_incident(incident.pk) == point_id(incident.pk)
        assert index.index_incident(incident.pk) == point_id(incident.pk)
        rows = Investigation.objects.filter(incident=incident)
        indexed = dict(rows.values_list("attempt_key", "indexed_at"))
        assert indexed[f"{incident.pk}:2"] is not None  # the one the document was built from
        assert indexed[f"{incident.pk}:3"] is None
        stored = index.memory().get(incident.pk)
        assert stored is not None
        assert stored.root_cause_entity == "cart"
        assert stored.tier == "issue"
        incident.delete()
        assert index.index_incident(incident_id) is None  # gone from the database: gone from memory
        assert index.memory().get(incident_id) is None
    finally:
        index.delete(incident_id)


def test_recall_for_an_incident_excludes_itself_and_says_where_priors_came_from() -> None:
    past, _ = make_incident(
        "quokka-gateway throughput collapsed after quokka-ledger lock contention",
        symptom="quokka-gateway",
        root="quokka-ledger",
        kind="lock_contention",
        path=["quokka-ledger", "quokka-gateway"],
    )
    new, _ = make_incident(
        "quokka-gateway throughput collapsed again", symptom="quokka-gateway", confident=False
    )
    try:
        index.index_incident(past.pk)
        index.index_incident(new.pk)
        priors, note = index.recall_for(new)
        assert max(priors, key=priors.__getitem__) == "quokka-ledger"
        assert note == f"priors from {len(priors)} similar past incident root cause(s)"
        own, _ = index.recall_for(past)
        assert own.get("quokka-ledger", 0.0) < priors["quokka-ledger"]  # an incident never recalls itself
    finally:
        index.delete(past.pk)
        index.delete(new.pk)


def test_filters_and_hits_survive_the_trip_to_the_memory_worker() -> None:
    filters = SearchFilters(
        service=("payment", "cart"),
        fault_kind="cpu_saturation",
        since=ONSET,
        until=ONSET + timedelta(days=1),
        exclude_incident=7,
    )
    assert SearchFilters.from_dict(filters.to_dict()) == replace(filters, service=["payment", "cart"])
    assert SearchFilters.from_dict(SearchFilters().to_dict()) == SearchFilters()
    hit = index.Hit(incident_id=3, score=0.75, document=replace(corpus()[0], incident_id=3))
    assert index.Hit.from_dict(hit.to_dict()) == hit
