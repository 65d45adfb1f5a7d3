"""Intake under load on every database (issue #23): a bounded burst of deliveries, a fifth of them
re-sends, gets no 5xx and loses or doubles nothing; a database lock held past the retries answers 503
in JSON with Retry-After, and the same delivery sent again is stored. (The target rates are measured
by bench/bench_storm.py, not asserted here.)"""

from __future__ import annotations

import sqlite3
import statistics

import pytest

from tests.faults.stack import Stack, alert, payload

pytestmark = [pytest.mark.integration, pytest.mark.slow]
POSTS = 400  # over 10 s from 8 senders: 40 posts/s, bounded in count and time
RATE = 40.0
SENDERS = 8
DUPLICATE_EVERY = 5  # every fifth post re-sends an earlier one, as a retrying Alertmanager does


def test_a_burst_of_deliveries_gets_no_5xx_and_loses_nothing(stack: Stack) -> None:
    distinct = [n for n in range(POSTS) if n % DUPLICATE_EVERY]
    plan = [n if n % DUPLICATE_EVERY else distinct[n // DUPLICATE_EVERY] for n in range(POSTS)]
    bodies = [payload(f"load-{n % 20}", [alert(10**7 + n, n % 20)]) for n in plan]
    results = stack.send_on_schedule(bodies, RATE, SENDERS)
    statuses = [status for status, _ in results]
    latencies = sorted(took for _, took in results)
    p95 = latencies[int(0.95 * (len(latencies) - 1))]
    print(
        f"\n{stack.kind}: {POSTS} posts at {RATE:.0f}/s: p50 {statistics.median(latencies) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, statuses {sorted(set(statuses))}"
    )
    assert statuses == [202] * POSTS
    stored = stack.rows(
        "SELECT fingerprint, COUNT(*) FROM incidents_alert WHERE fingerprint LIKE '0000000000%' "
        "GROUP BY fingerprint"
    )
    expected = {f"{10**7 + n:016x}" for n in distinct}
    assert {fp for fp, _ in stored} >= expected  # nothing lost
    assert all(count == 1 for fp, count in stored if fp in expected)  # nothing doubled


def test_a_lock_held_past_the_retries_is_a_json_503_then_the_resend_is_stored(stack: Stack) -> None:
    if stack.kind != "sqlite":
        pytest.skip("the database lock of the embedded default (PostgreSQL waits on row locks instead)")
    body = payload("locked", [alert(2 * 10**7, 1)])
    holder = sqlite3.connect(stack.root / "rootline.sqlite3", timeout=5, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # another writer holding the database
        status, _, response = stack.post(body)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert status == 503
    assert response.headers["Content-Type"].startswith("application/json")
    assert int(response.headers["Retry-After"]) > 0
    assert response.json()["code"] == "service_unavailable"
    assert "nothing was stored" in response.json()["detail"]
    status, _, response = stack.post(body)
    assert status == 202, response.text
    assert response.json()["alerts_stored"] == 1
