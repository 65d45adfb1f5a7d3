"""`manage.py list_cases`: the recorded public cases available for import."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser
from typing_extensions import override

from rca.incidents.management.commands._cases import CaseCommand, usage_error

ALL = "all"


class Command(CaseCommand):
    help = "List recorded cases (dataset, case id, system, split, telemetry) from the case index."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        self.add_data_argument(parser)
        parser.add_argument(
            "--dataset", action="append", dest="datasets", default=[], metavar="D", help="repeatable"
        )
        # Checked in handle, not by argparse `choices`, so the error is the same one line either way.
        parser.add_argument(
            "--split", default=ALL, help="a split the index names (e.g. dev), or all (default: all)"
        )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        split: str = options["split"]
        refs = self.index(self.data_dir(options))
        # The index says which splits exist; nothing here assumes their names.
        known = sorted({ref.split for ref in refs} | {ALL})
        if split not in known:
            raise usage_error(f"--split: unknown split {split!r} (use {', '.join(known)})")
        datasets: list[str] = options["datasets"]
        self.check_datasets(refs, datasets, "--dataset")
        chosen = [
            ref
            for ref in refs
            if (split == ALL or ref.split == split) and (not datasets or ref.dataset in datasets)
        ]
        rows = [(ref.dataset, ref.case_id, ref.system, ref.split, ref.telemetry) for ref in chosen]
        widths = [max((len(row[i]) for row in rows), default=0) for i in range(4)]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
            self.stdout.write("  ".join([*cells, row[4]]))
        self.stdout.write(f"{len(rows)} case{'' if len(rows) == 1 else 's'}")
