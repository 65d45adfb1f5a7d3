"""`manage.py import_case DATASET CASE_ID`: open the incident of a recorded case (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser
from typing_extensions import override

from rca.incidents.intake import ingest_recorded_case
from rca.incidents.management.commands._cases import CaseCommand, usage_error
from rca.telemetry.cases import load_case


class Command(CaseCommand):
    help = "Create the incident of a recorded case, with its alert and a reference to its telemetry."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", metavar="DATASET", help="e.g. petshop, nezha (see list_cases)")
        parser.add_argument("case_id", metavar="CASE_ID", help="the case id as list_cases prints it")
        self.add_data_argument(parser)

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        dataset: str = options["dataset"]
        case_id: str = options["case_id"]
        data_dir = self.data_dir(options)
        refs = self.index(data_dir)
        self.check_datasets(refs, [dataset], "DATASET")
        ref = next((r for r in refs if r.dataset == dataset and r.case_id == case_id), None)
        if ref is None:
            hint = f"manage.py list_cases --dataset {dataset}"
            raise usage_error(f"CASE_ID: no case {case_id!r} in dataset {dataset} (see {hint})")
        try:
            case = load_case(data_dir, ref)
        except (OSError, ValueError) as exc:  # missing or malformed files of that case
            raise CommandError(f"{dataset} {case_id}: cannot load the recorded case: {exc}") from None
        result = ingest_recorded_case(data_dir, ref, case)
        incident_id = result.incidents[0]
        if result.incidents_created:
            self.stdout.write(f"imported {dataset} {case_id} as incident #{incident_id}")
        else:
            self.stdout.write(f"{dataset} {case_id} was already imported: incident #{incident_id}")
