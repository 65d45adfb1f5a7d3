"""`manage.py sync_graph`: the graph rebuilt from the relational database; `--since`; argument errors."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from neo4j import Driver

from graphstore.driver import database
from graphstore.reads import incident_subgraph, past_incidents, propagation_path
from graphstore.sync import project_investigation
from rca.incidents.models import Investigation
from tests.conftest import REPO_ROOT
from tests.integration.graph.factory import ONSET, graph_counts, make_incident, make_investigation

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def sync(*args: str) -> str:
    out = io.StringIO()
    call_command("sync_graph", *args, stdout=out)
    return out.getvalue()


def test_sync_graph_rebuilds_a_wiped_graph(graph: Driver) -> None:
    first = make_incident()
    make_investigation(first, evidence=5)  # superseded by the next one
    latest = make_investigation(first, path=("payment", "checkout"), evidence=4)
    second = make_incident(symptom="cart")
    make_investigation(second, confident=False, evidence=3)
    third = make_incident(symptom="search")
    make_investigation(third, status=Investigation.Status.RUNNING, finished_at=ONSET)  # not finished

    project_investigation(latest)
    projected = graph_counts(graph, database())
    graph.execute_query("MATCH (n) DETACH DELETE n", database_=database())
    assert graph_counts(graph, database()) == ({}, {})

    out = sync()
    assert out.startswith("projected 2 incidents: 5 hypotheses, 7 evidence items, 1 root causes, 1 hops;")
    nodes, rels = graph_counts(graph, database())
    assert rels["ROOT_CAUSED_BY"] == 1
    assert nodes["Incident"] == 2
    # The first incident is back exactly as it was projected from its latest investigation.
    first_only = incident_subgraph(first.pk)
    assert first_only is not None
    assert first_only["incident"]["investigation"] == latest.pk
    assert first_only["incident"]["root_cause"] == "payment"
    assert [(h["cause"], h["effect"]) for h in propagation_path(first.pk)] == [("payment", "checkout")]
    assert incident_subgraph(third.pk) is None
    assert sum(n["label"] == "Evidence" for n in first_only["nodes"]) == projected[0]["Evidence"]

    # Running it again changes nothing.
    before = graph_counts(graph, database())
    sync()
    assert graph_counts(graph, database()) == before


def test_full_sync_prunes_incidents_the_database_no_longer_has(graph: Driver) -> None:
    kept = make_incident()
    make_investigation(kept)
    gone = make_incident(symptom="cart")
    project_investigation(make_investigation(gone, path=("redis", "cart")))
    gone.delete()

    out = sync()
    assert "pruned 1 incidents" in out
    assert incident_subgraph(gone.pk) is None
    assert incident_subgraph(kept.pk) is not None
    nodes, _ = graph_counts(graph, database())
    assert nodes["Hypothesis"] == 3  # only the kept incident's


def test_since_limits_the_rebuild(graph: Driver) -> None:
    old = make_incident()
    make_investigation(old, finished_at=ONSET + timedelta(days=1))
    new = make_incident(symptom="cart")
    make_investigation(new, path=("redis", "cart"), finished_at=ONSET + timedelta(days=3))

    out = sync("--since", "2024-05-03T00:00:00Z")
    assert out.startswith("projected 1 incidents finished since 2024-05-03T00:00:00+00:00:")
    assert "pruned 0 incidents" in out
    assert incident_subgraph(old.pk) is None
    assert incident_subgraph(new.pk) is not None
    # A naive time is UTC, and a date alone is midnight.
    assert sync("--since", "2024-05-03").startswith("projected 1 incidents")
    assert sync("--since", "2024-05-02T10:00:01").startswith("projected 1 incidents")
    assert sync("--since", "2024-05-02T10:00:00").startswith("projected 2 incidents")
    assert [i["key"] for i in past_incidents("redis")] == []  # no namespace: not the "shop" service
    assert [(i["id"], i["roles"]) for i in past_incidents("redis", "shop")] == [(new.pk, ["root_cause"])]


@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", "", "2024-05-01T25:00"])
def test_bad_since_is_a_usage_error(graph: Driver, value: str) -> None:
    with pytest.raises(CommandError) as caught:
        sync("--since", value)
    assert caught.value.returncode == 2
    assert str(caught.value).startswith(f"--since: {value!r} is not an ISO-8601 date or time")


def test_bad_since_from_the_command_line_is_one_line_and_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "sync_graph", "--since", "last tuesday"],
        cwd=REPO_ROOT,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "--since: 'last tuesday' is not an ISO-8601 date or time" in lines[0]
    assert "Traceback" not in done.stderr
