"""`manage.py evaluate`: run the real engine (offline policy) over recorded cases and score it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from rca.evaluation.ablations import VARIANTS
from rca.evaluation.runner import SPLITS, Selection, run, write
from rca.evaluation.scoring import CaseRow
from rca.telemetry.cases import CaseIndexError


class Command(BaseCommand):
    help = "Evaluate the investigation engine on recorded cases; writes OUTDIR/scorecard.json and cases.csv."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data", type=Path, default=None, help="folder with cases_index.csv")
        parser.add_argument("--split", default="dev", choices=SPLITS)
        parser.add_argument(
            "--dataset", action="append", default=[], help="restrict to a dataset (repeatable)"
        )
        parser.add_argument("--limit", type=int, default=None, help="at most N cases")
        parser.add_argument("--out", type=Path, required=True, help="output folder")
        parser.add_argument(
            "--variant",
            action="append",
            choices=sorted(VARIANTS),
            default=[],
            help="engine variant(s) for ablations; each is written under OUTDIR/<variant>/ (default: full)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        data: Path | None = options["data"] or settings.ROOTLINE_DATA_DIR
        if data is None or not (Path(data) / "cases_index.csv").is_file():
            raise CommandError(f"--data: no cases_index.csv in {data}", returncode=2)
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit: must be at least 1", returncode=2)
        selection = Selection(Path(data), options["split"], tuple(options["dataset"]), options["limit"])
        try:
            refs = selection.refs()
        except (CaseIndexError, ValueError) as exc:
            raise CommandError(str(exc), returncode=2) from None
        if not refs:
            raise CommandError("no case matches --split/--dataset", returncode=2)
        verbosity = int(options["verbosity"])

        def report(row: CaseRow) -> None:
            if verbosity >= 1:
                self.stdout.write(
                    f"{row.key:32s} {row.case_id:42s} rank={row.rank or '-':>2} {row.exit:24s} "
                    f"{row.tier:12s} {row.seconds:6.2f}s"
                )

        variants = options["variant"] or ["full"]
        cards = {}
        for name in variants:
            out = options["out"] if len(variants) == 1 else options["out"] / name
            rows = run(selection, VARIANTS[name], on_case=report)
            cards[name] = write(rows, out)
        self.stdout.write(
            json.dumps(cards if len(variants) > 1 else cards[variants[0]], indent=2, sort_keys=True)
        )
