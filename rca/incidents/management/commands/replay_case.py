"""`manage.py replay_case CASE_ID --data DIR --out DIR`: a recorded case as a live cluster.

Writes the case's metrics as OpenMetrics under the conventions real clusters use, backfills a Prometheus
data dir with promtool, and writes the rule file and both servers' configuration (see
`rca.telemetry.replay` and docs/live-conventions.md). Without `--token`, an Alertmanager intake token is
issued for the replay (like `create_intake_token alertmanager`), named `replay CASE_ID`, or `replay CASE_ID
(2)`, ... when the case was replayed before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import DatabaseError
from typing_extensions import override

from rca.incidents.management.commands._cases import CaseCommand, usage_error
from rca.incidents.models import IntakeToken
from rca.incidents.tokens import issue_token
from rca.telemetry.replay.replay import (
    DEFAULT_ALERTMANAGER,
    DEFAULT_WEBHOOK,
    OutputInUse,
    ReplayError,
    ReplayPaths,
    replay_case,
)


class Command(CaseCommand):
    help = "Replay a recorded case into a Prometheus data dir, with alert rules and an Alertmanager config."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("case_id", metavar="CASE_ID", help="the case id as list_cases prints it")
        self.add_data_argument(parser)
        parser.add_argument("--out", metavar="DIR", required=True, help="an absent or empty folder to write")
        parser.add_argument(
            "--webhook",
            metavar="URL",
            default=DEFAULT_WEBHOOK,
            help=f"Rootline's Alertmanager webhook (default {DEFAULT_WEBHOOK})",
        )
        parser.add_argument(
            "--alertmanager",
            metavar="HOST:PORT",
            default=DEFAULT_ALERTMANAGER,
            help=f"where Prometheus sends alerts (default {DEFAULT_ALERTMANAGER})",
        )
        parser.add_argument(
            "--token",
            metavar="TOKEN",
            help="the Alertmanager intake token to present (default: issue a new one)",
        )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        case_id: str = options["case_id"]
        data_dir = self.data_dir(options)
        matches = [r for r in self.index(data_dir) if r.case_id == case_id]
        if not matches:
            raise usage_error(f"CASE_ID: no case {case_id!r} in the index (see manage.py list_cases)")
        if len(matches) > 1:
            names = ", ".join(sorted(r.dataset for r in matches))
            raise usage_error(f"CASE_ID: {case_id!r} names a case in several datasets ({names})")
        out = Path(options["out"]).expanduser()
        try:
            ReplayPaths(out).check_fresh()
        except OutputInUse as exc:
            raise usage_error(f"--out: {exc}") from None
        token = options["token"]
        if token is None:
            try:
                issued = issue_token(_unused_name(f"replay {case_id}"), "alertmanager")
            except DatabaseError as exc:  # e.g. a database not migrated yet
                raise CommandError(
                    f"cannot issue an intake token ({exc}): run `manage.py migrate`, or pass --token"
                ) from None
            token = issued.token
            self.stdout.write(f"issued intake token {issued.record.prefix}... for Alertmanager")
        try:
            manifest = replay_case(
                data_dir,
                matches[0],
                out,
                token=token,
                webhook=options["webhook"],
                alertmanager=options["alertmanager"],
            )
        except ReplayError as exc:
            raise CommandError(str(exc)) from None
        except (OSError, ValueError) as exc:  # missing or malformed files of that case
            raise CommandError(f"{case_id}: cannot replay the recorded case: {exc}") from None
        self._report(manifest)

    def _report(self, manifest: dict[str, Any]) -> None:
        paths = manifest["paths"]
        flags = " ".join(f"{k}={v}" for k, v in manifest["prometheus_flags"].items())
        self.stdout.write(
            f"replayed {manifest['case']['case_id']}: {manifest['series_total']} series, "
            f"{manifest['samples']} samples, {manifest['openmetrics_bytes']} bytes of OpenMetrics, "
            f"backfilled in {manifest['backfill_seconds']:.1f} s; rules on {manifest['entry_service']}: "
            f"{', '.join(manifest['rules']) or 'none'}"
        )
        self.stdout.write("start the servers now (the replayed data ends at the moment of the replay):")
        self.stdout.write(
            f"  prometheus --config.file={paths['prometheus_config']} --storage.tsdb.path={paths['tsdb']} "
            f"--web.listen-address=127.0.0.1:9090 {flags}"
        )
        self.stdout.write(
            f"  prometheus-alertmanager --config.file={paths['alertmanager_config']} "
            "--storage.path=<a folder> --web.listen-address=127.0.0.1:9093 --cluster.listen-address="
        )
        self.stdout.write(f"manifest: {paths['manifest']}")


def _unused_name(name: str) -> str:
    """`name`, or `name (n)` with the first n no intake token is named by (token names are unique)."""
    taken = set(IntakeToken.objects.filter(name__startswith=name).values_list("name", flat=True))
    n = 1
    candidate = name
    while candidate in taken:
        n += 1
        candidate = f"{name} ({n})"
    return candidate
