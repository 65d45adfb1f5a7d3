"""Issue #23's probe table, re-run: each row's result before the change (quoted from the issue) and now.

Usage: .venv/bin/python bench/probe_reliability.py [--database sqlite|postgres] [--rows 1,2,...]

Runs on the supervised stack of tests/faults/stack.py (by default the embedded default: a SQLite file
and the embedded Redis, as `dev.py run`) with an ArcadeDB graph server of its own, which the "graph
server stopped" row stops, and the installation's default deadlines except the outbox's, shortened
so a lost investigation is re-sent within the probe (ROOTLINE_REDISPATCH_AFTER_S=10,
ROOTLINE_HEARTBEAT_STALE_S=10, ROOTLINE_SWEEP_EVERY_S=2). Every request goes to 127.0.0.1, every
loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.faults.stack import REPO, Stack, alert, own_graph, payload, running

PASSWORD = "probe-pw-1234567"
# The stack trusts one proxy (ROOTLINE_NUM_PROXIES=1), so each row can speak from an address of its own
# (documentation range), as senders behind a proxy do.
FROM_8 = {"X-Forwarded-For": "198.51.100.8"}
ROWS: list[tuple[str, str, Callable[[Stack, dict[str, str]], str]]] = []
GRAPH: list[Any] = []  # the probe's graph server, for the row that stops it


def row(probe: str, today: str) -> Callable[[Callable[[Stack, dict[str, str]], str]], Callable[..., str]]:
    """Register a probe with the result the issue reported for it."""

    def register(fn: Callable[[Stack, dict[str, str]], str]) -> Callable[..., str]:
        ROWS.append((probe, today, fn))
        return fn

    return register


def shell(stack: Stack, code: str) -> str:
    """Run Python in `manage.py shell` against the stack's database; its output."""
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO,
        env=stack.env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout.strip()


def accounts(stack: Stack) -> dict[str, str]:
    """Intake tokens (5), users with roles and their API tokens; the secrets by name."""
    code = f"""
import json
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token
from rca.incidents.tokens import issue_token
out = {{f"intake{{i}}": issue_token(f"probe-{{i}}", "alertmanager").token for i in range(5)}}
for role in ("viewer", "responder", "approver"):
    user = User.objects.create_user(f"probe-{{role}}", password="{PASSWORD}")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    out[role] = Token.objects.create(user=user).key
User.objects.create_user("probe-target", password="{PASSWORD}")
User.objects.create_user("probe-admin", password="{PASSWORD}", is_staff=True)
print(json.dumps(out))
"""
    return dict(json.loads(shell(stack, code).splitlines()[-1]))


def storm(
    stack: Stack, posts: int, seconds: float, tokens: list[str], tag: str
) -> tuple[list[int], list[float]]:
    """`posts` deliveries of one alert over `seconds` (a fifth re-sends), round-robin over `tokens`."""
    distinct = int(posts * 0.8)
    bodies = [
        payload(f"{tag}-{n % 40}", [alert(hash(tag) % 10**6 * 10**4 + n % distinct, n % 40)])
        for n in range(posts)
    ]
    results = stack.send_on_schedule(bodies, posts / seconds, 32, tokens)
    return [s for s, _ in results], sorted(t for _, t in results)


def stored(stack: Stack, tag: str) -> int:
    return int(
        stack.rows(
            f"SELECT COUNT(*) FROM incidents_alert a JOIN incidents_incident n ON n.id = a.incident_id "
            f"WHERE n.group_key LIKE '%group=\"{tag}-%'"
        )[0][0]
    )


def storm_line(stack: Stack, posts: int, seconds: float, tokens: list[str], tag: str) -> str:
    statuses, latencies = storm(stack, posts, seconds, tokens, tag)
    fivexx = sum(1 for s in statuses if s >= 500)
    other = sorted({s for s in statuses if s != 202})
    lost = int(posts * 0.8) - stored(stack, tag)
    return (
        f"{fivexx} x 5xx (non-202: {other or 'none'}), p50 {statistics.median(latencies) * 1000:.0f} ms, "
        f"p95 {latencies[int(0.95 * (len(latencies) - 1))] * 1000:.0f} ms; stored {stored(stack, tag)} of "
        f"{int(posts * 0.8)} distinct: lost {max(lost, 0)}, no retries"
    )


@row(
    "2,000 Alertmanager posts in 20 s (1,600 distinct, 400 duplicates), 1 token",
    "1,770 x HTTP 500 (HTML 'database is locked'), p50 1.0 s",
)
def storm_one_token(stack: Stack, secrets: dict[str, str]) -> str:
    return storm_line(stack, 2000, 20, [secrets["intake0"]], "one")


@row("same, 5 tokens", "1,870 x 500 (93.5%)")
def storm_five_tokens(stack: Stack, secrets: dict[str, str]) -> str:
    return storm_line(stack, 2000, 20, [secrets[f"intake{i}"] for i in range(5)], "five")


@row("400 posts at 20/s", "138 x 500 (34.5%)")
def slow_storm(stack: Stack, secrets: dict[str, str]) -> str:
    return storm_line(stack, 400, 20, [secrets["intake0"]], "slow")


def investigations(stack: Stack, tag: str) -> list[tuple[int, str, int]]:
    return stack.investigations(tag)


def until_finished(stack: Stack, tag: str, expected: int, timeout: float) -> str:
    started = time.monotonic()
    try:
        stack.watch_until(
            lambda: (
                len(investigations(stack, tag)) == expected
                and all(s == "succeeded" for _, s, _ in investigations(stack, tag))
            ),
            timeout,
            tag,
        )
    except TimeoutError:
        states = [s for _, s, _ in investigations(stack, tag)]
        return f"NOT finished within {timeout:.0f} s: {states}"
    once = all(n == 1 for _, _, n in investigations(stack, tag))
    how = "exactly once" if once else "MORE THAN ONCE"
    return f"all {expected} succeeded {how} within {time.monotonic() - started:.0f} s"


def post_groups(stack: Stack, tag: str, groups: int) -> None:
    for g in range(groups):
        stack.post(payload(f"{tag}-{g}", [alert(hash(tag) % 10**6 * 10**4 + g, g)]))


@row(
    "Redis crash with investigations already handed to it",
    "they stay 'queued' forever; the sweep re-sends only rows never sent; a rerun is refused with 409",
)
def redis_crash(stack: Stack, secrets: dict[str, str]) -> str:
    before = stack.redispatched()
    post_groups(stack, "redis", 10)
    stack.kill("redis")
    done = until_finished(stack, "redis", 10, 180)
    return f"Redis restarted by the supervisor; {done}; {stack.redispatched() - before} re-sent by the sweep"


@row(
    "investigation worker's main process killed",
    "not restarted; incident shows 'running', reruns refused until redelivery (~15 min); /healthz stays 200",
)
def worker_killed(stack: Stack, secrets: dict[str, str]) -> str:
    restarts = stack.child("worker").restarts
    post_groups(stack, "worker", 6)
    stack.kill("worker")
    pid_gone = time.monotonic()
    done = until_finished(stack, "worker", 6, 180)
    return (
        f"restarted by the supervisor ({stack.child('worker').restarts - restarts} restart, "
        f"{time.monotonic() - pid_gone:.0f} s to all finished); {done}"
    )


@row("embedded beat scheduler killed", "not restarted; the outbox sweep stops; /healthz stays 200")
def beat_killed(stack: Stack, secrets: dict[str, str]) -> str:
    restarts = stack.child("scheduler").restarts
    stack.kill("scheduler")
    deadline = time.monotonic() + 20
    while stack.child("scheduler").restarts == restarts and time.monotonic() < deadline:
        stack.supervisor.check()
        time.sleep(0.2)
    post_groups(stack, "beat", 4)
    stack.kill("redis")  # only the restarted scheduler's sweep can recover these
    done = until_finished(stack, "beat", 4, 180)
    again = stack.child("scheduler").restarts - restarts
    return f"restarted by the supervisor ({again}); sweep ran again: {done}"


@row(
    "graph server stopped",
    "/healthz 14-16 s per call; 16 concurrent checks pushed an intake post to 28.5 s; /status 16 s; "
    "/metrics 6 s with Redis down",
)
def graph_stopped(stack: Stack, secrets: dict[str, str]) -> str:
    GRAPH[0].stop()
    code, took, response = stack.get("/healthz")
    single = (
        f"/healthz {code} in {took:.2f} s (graph: {response.json()['checks']['graph']['detail'][:40]}...)"
    )
    with ThreadPoolExecutor(16) as pool:
        probes = [pool.submit(stack.get, "/healthz") for _ in range(16)]
        time.sleep(0.1)
        status, intake_took, _ = stack.post(payload("graphprobe", [alert(9_999_999, 1)]))
        slowest = max(p.result()[1] for p in probes)
    with httpx.Client(base_url=stack.url, timeout=30) as browser:
        page = browser.get("/login/")
        browser.post(
            "/login/",
            data={
                "username": "probe-viewer",
                "password": PASSWORD,
                "csrfmiddlewaretoken": page.cookies["csrftoken"],
            },
        )
        began = time.perf_counter()
        status_page = browser.get("/status/")
        status_took = time.perf_counter() - began
    redis_pid = stack.kill("redis", sig=19)  # SIGSTOP: Redis hangs (its port accepts, nothing answers)
    try:
        metrics_code, metrics_took, _ = stack.get("/metrics")
        health_code, health_took, _ = stack.get("/healthz")
    finally:
        os.kill(redis_pid, 18)  # SIGCONT
    return (
        f"{single}; 16 concurrent: slowest {slowest:.2f} s, intake post during them {status} in "
        f"{intake_took:.2f} s; /status {status_page.status_code} in {status_took:.2f} s; with Redis hung: "
        f"/metrics {metrics_code} in "
        f"{metrics_took:.2f} s, /healthz {health_code} in {health_took:.2f} s"
    )


@row(
    "~60 failed logins from an address, then a valid intake token from it",
    "the valid intake token also gets 429",
)
def logins_then_intake(stack: Stack, secrets: dict[str, str]) -> str:
    with httpx.Client(base_url=stack.url, timeout=30, headers=FROM_8) as browser:
        codes = []
        for n in range(60):
            page = browser.get("/login/")
            codes.append(
                browser.post(
                    "/login/",
                    data={
                        "username": f"nobody-{n}",
                        "password": "wrong",
                        "csrfmiddlewaretoken": page.cookies.get("csrftoken", ""),
                    },
                ).status_code
            )
    headers = {"Authorization": "Bearer rlt_not_a_token", "Content-Type": "application/json", **FROM_8}
    wrong = [
        httpx.post(f"{stack.url}/api/v1/webhooks/alertmanager/", content=b"{}", headers=headers).status_code
        for _ in range(70)
    ]
    valid = {"Authorization": f"Bearer {secrets['intake1']}", "Content-Type": "application/json", **FROM_8}
    status = httpx.post(
        f"{stack.url}/api/v1/webhooks/alertmanager/",
        content=payload("aftermath", [alert(8_888_888, 1)]),
        headers=valid,
    ).status_code
    return (
        f"logins: {codes.count(200)} x 200 then {codes.count(429)} x 429 (address locked out); 70 bad intake "
        f"tokens: {wrong.count(401)} x 401, {wrong.count(429)} x 429; valid intake token from the same "
        "address: "
        f"{status}"
    )


@row(
    "login page, admin login, API tokens: 30 wrong passwords then the right one",
    "no brute-force throttling (30 wrong passwords in 11.7 s, then the right one works)",
)
def brute_force(stack: Stack, secrets: dict[str, str]) -> str:
    out = []
    for n, (path, account) in enumerate((("/login/", "probe-target"), ("/admin/login/", "probe-admin"))):
        address = {"X-Forwarded-For": f"198.51.100.{20 + n}"}
        with httpx.Client(base_url=stack.url, timeout=30, headers=address) as browser:
            codes = []
            for _ in range(30):
                page = browser.get(path)
                form = {
                    "username": account,
                    "password": "wrong",
                    "csrfmiddlewaretoken": page.cookies.get("csrftoken", ""),
                }
                codes.append(browser.post(path, data=form).status_code)
        # The right password, from yet another address: the account itself is locked.
        with httpx.Client(
            base_url=stack.url, timeout=30, headers={"X-Forwarded-For": f"198.51.100.{30 + n}"}
        ) as other:
            page = other.get(path)
            form = {
                "username": account,
                "password": PASSWORD,
                "csrfmiddlewaretoken": page.cookies.get("csrftoken", ""),
            }
            right = other.post(path, data=form)
        out.append(
            f"{path}: first 429 at attempt {codes.index(429) + 1 if 429 in codes else 'never'}, "
            f"right password then {right.status_code}"
        )
    guess = {"Authorization": f"Token {'0' * 40}", "X-Forwarded-For": "198.51.100.40"}
    api = [httpx.get(f"{stack.url}/api/v1/incidents/", headers=guess).status_code for _ in range(35)]
    out.append(f"API token guesses: {api.count(401)} x 401 then {api.count(429)} x 429")
    return "; ".join(out)


@row("rerun of an investigation", "adds a new proposal while the old ones stay approvable (two approvals)")
def rerun(stack: Stack, secrets: dict[str, str]) -> str:
    pk, proposal = stack.rows(
        "SELECT p.investigation_id, p.id FROM incidents_actionproposal p "
        "WHERE p.status = 'proposed' ORDER BY p.id LIMIT 1"
    )[0]
    responder = {"Authorization": f"Token {secrets['responder']}"}
    approver = {"Authorization": f"Token {secrets['approver']}"}
    rerun = httpx.post(f"{stack.url}/api/v1/investigations/{pk}/rerun/", headers=responder)
    approve = httpx.post(
        f"{stack.url}/api/v1/actions/{proposal}/approve/", json={"reason": "probe"}, headers=approver
    )
    return (
        f"rerun {rerun.status_code}; approving the earlier proposal: {approve.status_code} "
        f"{approve.json().get('code')} ('{approve.json().get('detail', '')[:70]}...')"
    )


@row(
    "intake input",
    "any Content-Type accepted; chunked body refused; 5,000-char severity stored; "
    "10,000-alert incident detail unpaginated (2.4 MB)",
)
def intake_input(stack: Stack, secrets: dict[str, str]) -> str:
    url = f"{stack.url}/api/v1/webhooks/alertmanager/"
    auth = {"Authorization": f"Bearer {secrets['intake0']}"}
    body = payload("input", [alert(7_000_001, 1)])
    plain = httpx.post(url, content=body, headers={**auth, "Content-Type": "text/plain"}).status_code
    chunked = httpx.post(
        url, content=iter([body[:50], body[50:]]), headers={**auth, "Content-Type": "application/json"}
    )
    long_alert = alert(7_000_002, 1)
    long_alert["labels"]["severity"] = "x" * 5000
    severity = httpx.post(
        url, content=payload("input", [long_alert]), headers={**auth, "Content-Type": "application/json"}
    )
    many = [alert(7_100_000 + n, 1) for n in range(10_000)]
    for start in range(0, 10_000, 2_000):  # 1 MiB per delivery at most: five deliveries of one group
        stack.post(payload("big", many[start : start + 2_000]))
    incident = stack.rows("SELECT id FROM incidents_incident WHERE group_key LIKE '%group=\"big\"%'")[0][0]
    viewer = {"Authorization": f"Token {secrets['viewer']}"}
    detail = httpx.get(f"{stack.url}/api/v1/incidents/{incident}/", headers=viewer, timeout=60)
    return (
        f"text/plain: {plain}; chunked: {chunked.status_code} (sent chunked: "
        f"{'Transfer-Encoding' in chunked.request.headers}); 5,000-char severity: {severity.status_code} "
        f"({list(severity.json().get('errors', {}).values())[:1]}); 10,000-alert incident: detail "
        f"{len(detail.content) / 1024:.0f} KB with {len(detail.json()['alerts'])} of "
        f"{detail.json()['alert_count']} alerts, the rest at alerts/ (paginated)"
    )


@row("session cookie and HSTS", "no Secure flag option; no HSTS option for TLS deployments")
def tls(stack: Stack, secrets: dict[str, str]) -> str:
    code = """
from django.test import Client
r = Client().get("/login/", secure=True)
print(r.cookies["csrftoken"]["secure"], r.headers.get("Strict-Transport-Security"))
"""
    env = {
        **stack.env,
        "SESSION_COOKIE_SECURE": "true",
        "CSRF_COOKIE_SECURE": "true",
        "SECURE_HSTS_SECONDS": "31536000",
        "ALLOWED_HOSTS": "testserver",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    secure, hsts = done.stdout.strip().splitlines()[-1].split(" ", 1)
    set_ = "SESSION_COOKIE_SECURE / CSRF_COOKIE_SECURE / SECURE_HSTS_SECONDS set"
    return f"with {set_}: cookie Secure={secure}, HSTS '{hsts}'"


def main() -> int:
    """Bring the stack up, run the chosen rows, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--rows", help="comma-separated row numbers (default: all)")
    args = parser.parse_args()
    chosen = [int(r) for r in args.rows.split(",")] if args.rows else list(range(1, len(ROWS) + 1))
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/probe")
    settings = {
        "ROOTLINE_REDISPATCH_AFTER_S": "10",
        "ROOTLINE_HEARTBEAT_STALE_S": "10",
        "ROOTLINE_SWEEP_EVERY_S": "2",
        "ROOTLINE_NUM_PROXIES": "1",
    }
    with (
        own_graph() as (graph, graph_env),
        running(args.database, workers=2, graph=graph_env, **settings) as stack,
    ):
        GRAPH.append(graph)
        secrets = accounts(stack)
        print(
            f"| # | probe | result before (issue #23) | result now ({args.database}, "
            f"{socket.gethostname()}) |"
        )
        print("|---|---|---|---|")
        for number in chosen:
            probe, today, fn = ROWS[number - 1]
            try:
                now = fn(stack, secrets)
            except Exception as exc:  # a probe that broke says so in its row; the others still run
                now = f"PROBE FAILED: {type(exc).__name__}: {exc}"
            print(f"| {number} | {probe} | {today} | {now} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
