"""Where the search relevance floor (rca.memory.index.SEARCH_MIN_SIMILARITY) comes from.

Embeds incident documents in the exact form incident memory stores them (IncidentDocument.text, over
a grid of services and fault kinds like those of the example incidents) and scores two sets of
queries against them with the same embedder as search: queries a responder would type about one of
those incidents (service and symptom, fault kind, evidence words), and gibberish (random letter
strings, keyboard mashing, seeded). Prints each set's best-match similarity distribution and the
midpoint between the highest gibberish score and the lowest relevant one.

    .venv/bin/python bench/relevance_floor.py
"""

from __future__ import annotations

import random
import string
from datetime import UTC, datetime
from itertools import product

import numpy as np

from rca.memory.documents import IncidentDocument
from rca.memory.embedding import get_embedder

SERVICES = ("checkoutservice", "paymentservice", "cartservice", "ts-order-service", "ts-travel-service")
KINDS = {
    "cpu": "cpu usage 97% from onset",
    "memory": "memory working set rising to the limit",
    "latency": "p99 latency 2.4 s against a 120 ms baseline",
    "errors": "error rate 0.31 with HTTP 500 responses",
    "pod_failure": "pod restarted 6 times, CrashLoopBackOff",
}
RELEVANT = (
    "checkout is slow",
    "payment errors",
    "cart memory leak",
    "order service cpu saturation",
    "travel service pod crashing",
    "high latency on checkoutservice",
    "HTTP 500 in paymentservice",
    "CrashLoopBackOff",
    "memory limit reached",
    "p99 latency spike",
    "error rate increase after deploy",
    "cpu throttling",
)


def gibberish(rng: random.Random, n: int) -> list[str]:
    """Random letter strings of one to four "words", and keyboard mashing."""
    out = []
    for _ in range(n):
        words = rng.randint(1, 4)
        out.append(
            " ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 12))) for _ in range(words))
        )
    return [*out, "asdfghjkl", "qwertyuiop", "zxcvbnm qwe", "lkjh asdf poiu", "xyzzy plugh"]


def main() -> None:
    """Print the distributions and the floor between them."""
    embedder = get_embedder()
    onset = datetime(2025, 1, 1, tzinfo=UTC)
    documents = [
        IncidentDocument(
            incident_id=i,
            title=f"{service} alert: {kind}",
            symptom_entity=service,
            services=(service, "frontend"),
            root_cause_entity=service,
            fault_kind=kind,
            tier="patch",
            exit="confident",
            evidence=(f"{service} {summary}",),
            onset=onset,
        ).text()
        for i, (service, (kind, summary)) in enumerate(product(SERVICES, KINDS.items()))
    ]
    vectors = np.stack([embedder.embed_one(d) for d in documents])

    def best(queries: list[str] | tuple[str, ...]) -> np.ndarray:
        return np.array([float(np.max(vectors @ embedder.embed_one(q))) for q in queries])

    relevant = best(RELEVANT)
    noise = best(gibberish(random.Random(20261126), 40))
    for name, scores in (("relevant", relevant), ("gibberish", noise)):
        q = np.quantile(scores, [0.0, 0.5, 1.0])
        print(f"{name:10s} n={scores.size:3d} min {q[0]:.3f} median {q[1]:.3f} max {q[2]:.3f}")
    print(f"floor (midpoint of gibberish max and relevant min): {(noise.max() + relevant.min()) / 2:.3f}")


if __name__ == "__main__":
    main()
