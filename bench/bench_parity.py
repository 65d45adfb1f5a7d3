"""Benchmark: live parity. Each dev case replayed into a real Prometheus, alerted by a real Alertmanager into
Rootline's webhook (gunicorn, an Alertmanager intake token), investigated live (Prometheus only), then scored
against the same case investigated from its recording.

Usage: .venv/bin/python bench/bench_parity.py [--data DIR] [--dataset NAME ...] [--system NAME] [--limit N]
       [--case ID ...] [--out FILE.csv] [--recorded-without TOOL ...] [--recorded-alert]

Cases run one at a time (their alerts would group into one incident otherwise): replay, start both servers
on free ports, wait for the incident the webhook opens, investigate it in this process with the live
settings pointing at this case's Prometheus and, as the last topology source, a static topology file
(the worker's code path, `run_investigation`), delete the incident, stop the servers. A case whose
replayed rules do not fire within `ALERT_WAIT` counts as not alerted: parity is measured on the alerted
cases. With `--recorded-alert`, such a case's own alert (replay.json's `recorded_alert`, at its replayed
onset, with its signal's expression as `generatorURL`) is posted to the Alertmanager instead, so every
case goes through Alertmanager, the webhook and the live investigation; those cases are reported apart,
then together with the rule-alerted ones. Prints per dataset: alerted cases, recorded vs live AC@1, AC@3
and confident precision, the cases confident live but not recorded, and the end-to-end time from the
Alertmanager notification (the alert row's arrival) to the investigation's end (p50, p95).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.stack import free_port, running_stack  # noqa: E402
from rca.telemetry.cases import CaseRef, load_case, read_index  # noqa: E402

# `for: 1m` + a 15 s evaluation + Alertmanager's 10 s group_wait, with room for a loaded machine (as the
# end-to-end test, tests/live/test_replay_alert.py and test_live_end_to_end.py).
ALERT_WAIT = 150.0
INVESTIGATION_WAIT = 300.0


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def post_recorded_alert(am_url: str, prom_url: str, recorded: dict[str, Any]) -> None:
    """The case's own alert (the manifest's `recorded_alert`), posted to Alertmanager's v2 API as a rule
    would send it: with a `generatorURL` carrying its expression when the replay has one."""
    alert = {key: value for key, value in recorded.items() if key != "expr"}
    if recorded.get("expr"):
        alert["generatorURL"] = f"{prom_url}/graph?{urlencode({'g0.expr': recorded['expr'], 'g0.tab': 1})}"
    response = httpx.post(f"{am_url}/api/v2/alerts", json=[alert], timeout=10.0)
    response.raise_for_status()


def live_case(
    data: Path, ref: CaseRef, token: str, webhook: str, folder: Path, recorded_alert: bool = False
) -> dict[str, Any] | None:
    """One case through the live path; None when its replayed alert did not fire (and, with
    `recorded_alert`, the case's own alert is posted to Alertmanager instead)."""
    from django.test import override_settings

    from rca.incidents.investigations import run_investigation
    from rca.incidents.models import Incident, Investigation
    from rca.telemetry.replay.replay import replay_case
    from rca.telemetry.replay.servers import start_alertmanager, start_prometheus

    am_port, prom_port = free_port(), free_port()
    manifest = replay_case(
        data, ref, folder / "replay", token=token, webhook=webhook, alertmanager=f"127.0.0.1:{am_port}"
    )
    paths = manifest["paths"]
    started = time.monotonic()
    am = start_alertmanager(Path(paths["alertmanager_config"]), am_port, folder / "alertmanager")
    prom = start_prometheus(
        Path(paths["prometheus_config"]), Path(paths["tsdb"]), prom_port, folder, manifest["prometheus_flags"]
    )
    try:
        # A rule that does not hold at the replayed present is taken as not firing: nothing is written
        # after it, so later evaluations read only thinner rate windows of the same data.
        rules = yaml.safe_load(Path(paths["rules"]).read_text())["groups"][0]["rules"]
        alerted_by = "rules"
        if not any(prom.get("/api/v1/query", query=rule["expr"])["data"]["result"] for rule in rules):
            if not recorded_alert:
                return None
            post_recorded_alert(am.url, prom.url, manifest["recorded_alert"])
            alerted_by = "recorded alert"
        incident = None
        while incident is None and time.monotonic() - started < ALERT_WAIT:
            incident = Incident.objects.order_by("pk").last()
            time.sleep(0.2)
        if incident is None:
            return None
        investigation = incident.investigations.get()
        # What an operator without a traces backend or service-graph metrics gives: the system's call
        # graph as ROOTLINE_TOPOLOGY_FILE (the dataset's architecture graph; used only as the last resort).
        graph = load_case(data, ref).source.topology()
        topology = folder / "topology.json"
        topology.write_text(json.dumps({"edges": [[e.caller, e.callee] for e in graph.edges]}))
        live = {"prometheus": {"url": prom.url}, "topology_file": str(topology)}
        with override_settings(ROOTLINE_LIVE_TELEMETRY=live):
            run_investigation(investigation.pk)
        investigation = Investigation.objects.get(pk=investigation.pk)
        first = incident.alerts.order_by("received_at").first()
        if first is None or investigation.finished_at is None:
            raise SystemExit(f"{ref.case_id}: investigation {investigation.pk} did not finish")
        return {
            "top5": tuple(c["entity"] for c in investigation.candidates[:5]),
            "exit": investigation.exit or "failed",
            "status": investigation.status,
            "alerted_by": alerted_by,
            "e2e_seconds": (investigation.finished_at - first.received_at).total_seconds(),
            "alert_seconds": time.monotonic() - started,
            "alerts": sorted({a.labels.get("alertname", "") for a in incident.alerts.all()}),
            "topology": investigation.topology.get("origin", ""),
            # how far before the alert's firing the live onset hint lies (its rule's condition traced back)
            "onset_lead": first.starts_at.timestamp() - (investigation.result_document or {})["onset"],
        }
    finally:
        Incident.objects.all().delete()  # the next case's alert must open its own incident
        prom.stop()
        am.stop()


def summary(key: str, rows: list[dict[str, Any]]) -> list[str]:
    """The parity lines of one dataset key."""
    from rca.evaluation.scoring import ac_at

    recorded = [r["recorded"] for r in rows]
    live = [r["live"] for r in rows]

    def precision(cases: list[Any]) -> str:
        confident = [c for c in cases if c.exit == "confident"]
        return (
            f"{sum(c.correct for c in confident) / len(confident):.3f} ({len(confident)})"
            if confident
            else "- (0)"
        )

    extra = [
        r["live"].case_id for r in rows if r["live"].exit == "confident" and r["recorded"].exit != "confident"
    ]
    e2e = [r["e2e"] for r in rows]
    return [
        f"{key}: {len(rows)} alerted",
        f"  recorded  AC@1 {ac_at(recorded, 1):.3f}  AC@3 {ac_at(recorded, 3):.3f}  "
        f"confident precision {precision(recorded)}",
        f"  live      AC@1 {ac_at(live, 1):.3f}  AC@3 {ac_at(live, 3):.3f}  "
        f"confident precision {precision(live)}",
        f"  confident live, not recorded: {', '.join(extra) or 'none'}",
        f"  notification -> investigation finished: p50 {percentile(e2e, 0.5):.1f} s, "
        f"p95 {percentile(e2e, 0.95):.1f} s",
    ]


def main() -> int:
    """Run the parity bench; see the module docstring."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--dataset", action="append", default=[])
    parser.add_argument("--system", help="only cases of this system (e.g. OnlineBoutique)")
    parser.add_argument("--case", action="append", default=[])
    parser.add_argument("--limit", type=int)
    parser.add_argument("--out", type=Path, help="write one row per case here (CSV)")
    parser.add_argument(
        "--recorded-alert",
        action="store_true",
        help="when no replayed rule fires, post the case's own alert (replay.json's recorded_alert) to "
        "Alertmanager, so every case is investigated live; reported apart from the rule-alerted cases",
    )
    parser.add_argument(
        "--recorded-without",
        action="append",
        default=[],
        metavar="TOOL",
        help="leave this tool out of the recorded run (e.g. logs, for a system whose logs the replay lacks)",
    )
    args = parser.parse_args()
    # Stopped with SIGTERM, the servers and the stack still stop (SystemExit runs the `finally`s).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    refs = [
        r
        for r in read_index(args.data, split="dev", datasets=args.dataset or None)
        if (not args.system or r.system == args.system) and (not args.case or r.case_id in args.case)
    ][: args.limit]
    database = f"bench_parity_{os.getpid()}"
    rows: dict[str, list[dict[str, Any]]] = {}
    skipped: dict[str, int] = {}
    with running_stack(database) as stack:
        from rca.evaluation.runner import evaluate_case
        from rca.investigation.engine import EngineConfig
        from rca.tools.registry import ALL_TOOLS

        recorded_config = EngineConfig(tools=frozenset(ALL_TOOLS) - set(args.recorded_without))

        print(stack.describe(), flush=True)
        for n, ref in enumerate(refs, 1):
            system = f"{ref.dataset}/{ref.system}"
            with tempfile.TemporaryDirectory(prefix="parity-") as tmp:
                live = live_case(
                    args.data, ref, stack.token, stack.intake_url, Path(tmp), args.recorded_alert
                )
            if live is None:
                skipped[system] = skipped.get(system, 0) + 1
                print(f"[{n}/{len(refs)}] {ref.case_id}: no alert fired", flush=True)
                continue
            recorded = evaluate_case(args.data, ref, recorded_config)
            live_row = replace(recorded, top5=live["top5"], exit=live["exit"])
            key = system if live["alerted_by"] == "rules" else f"{system} (recorded alert posted)"
            rows.setdefault(key, []).append(
                {"recorded": recorded, "live": live_row, "e2e": live["e2e_seconds"]}
            )
            print(
                f"[{n}/{len(refs)}] {ref.case_id}: recorded {recorded.top5[:1]} {recorded.exit}; live "
                f"{live_row.top5[:1]} {live_row.exit} ({live['status']}); top-1 live/recorded "
                f"{'hit' if live_row.correct else 'miss'}/{'hit' if recorded.correct else 'miss'}; "
                f"alerts {live['alerts']} ({live['alerted_by']}) after {live['alert_seconds']:.0f} s; "
                f"e2e {live['e2e_seconds']:.1f} s; onset hint {live['onset_lead']:.0f} s before firing; "
                f"topology {live['topology'] or '-'}",
                flush=True,
            )
            if args.out:
                new = not args.out.exists()
                with args.out.open("a", newline="") as fh:
                    writer = csv.writer(fh)
                    if new:
                        writer.writerow(
                            [
                                "case_id",
                                "truth",
                                "recorded_top5",
                                "recorded_exit",
                                "live_top5",
                                "live_exit",
                                "e2e_s",
                                "alerted_by",
                            ]
                        )
                    writer.writerow(
                        [
                            ref.case_id,
                            recorded.truth,
                            "|".join(recorded.top5),
                            recorded.exit,
                            "|".join(live_row.top5),
                            live_row.exit,
                            f"{live['e2e_seconds']:.2f}",
                            live["alerted_by"],
                        ]
                    )
    print()
    posted = " (recorded alert posted)"
    for key in sorted({k.removesuffix(posted) for k in rows} | set(skipped)):
        print(f"{key}: {skipped.get(key, 0)} not alerted")
        for line in summary(key, rows.get(key, [])):
            print(line)
        if key + posted in rows:
            for line in summary(key + posted, rows[key + posted]):
                print(line)
            for line in summary(f"{key} (every case)", rows.get(key, []) + rows[key + posted]):
                print(line)
    every = [r["e2e"] for group in rows.values() for r in group]
    print(
        f"all: notification -> finished p50 {percentile(every, 0.5):.1f} s, "
        f"p95 {percentile(every, 0.95):.1f} s over {len(every)} cases (target p50 < 10 s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
