"""`manage.py import_examples`: a first run with real incidents — a few dev cases of every dataset."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser
from typing_extensions import override

from rca.incidents.intake import ingest_recorded_case
from rca.incidents.management.commands._cases import CaseCommand, usage_error
from rca.telemetry.cases import load_case


class Command(CaseCommand):
    help = (
        "Import the first dev case(s) of every dataset and system in the index, so a new installation "
        "opens on real, investigated incidents (idempotent)."
    )

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        self.add_data_argument(parser)
        parser.add_argument(
            "--per-system", type=int, default=1, help="cases per dataset and system (default 1)"
        )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        per_system: int = options["per_system"]
        if per_system < 1:
            raise usage_error("--per-system: must be at least 1")
        data_dir = self.data_dir(options)
        taken: dict[tuple[str, str], int] = {}
        imported = 0
        for ref in self.index(data_dir):
            key = (ref.dataset, ref.system)
            if ref.split != "dev" or taken.get(key, 0) >= per_system:
                continue
            taken[key] = taken.get(key, 0) + 1
            try:
                case = load_case(data_dir, ref)
            except (OSError, ValueError) as exc:
                raise CommandError(
                    f"{ref.dataset} {ref.case_id}: cannot load the recorded case: {exc}"
                ) from None
            result = ingest_recorded_case(data_dir, ref, case)
            imported += len(result.incidents_created)
            state = "imported" if result.incidents_created else "already there"
            self.stdout.write(f"{state}: {ref.dataset} {ref.case_id} (incident #{result.incidents[0]})")
        self.stdout.write(f"{imported} new incident(s) from {len(taken)} dataset/system pair(s)")
