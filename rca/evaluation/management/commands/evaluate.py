"""`manage.py evaluate`: run the real engine (offline policy) over recorded cases and score it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from rca.evaluation.ablations import VARIANTS
from rca.evaluation.folds import FOLDINGS, cross_fit, report, table
from rca.evaluation.runner import SPLITS, Selection, run, write
from rca.evaluation.scoring import CaseRow
from rca.telemetry.cases import CaseIndexError


class Command(BaseCommand):
    help = (
        "Evaluate the investigation engine on recorded cases; writes OUTDIR/scorecard.json and cases.csv "
        "(and OUTDIR/folds-<by>.json with --folds)."
    )

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--data",
            type=Path,
            action="append",
            default=[],
            help="folder with cases_index.csv (repeatable, e.g. the public data and a synthetic suite)",
        )
        parser.add_argument(
            "--split", action="append", choices=SPLITS, default=[], help="split(s) to score (default: dev)"
        )
        parser.add_argument(
            "--dataset", action="append", default=[], help="restrict to a dataset (repeatable)"
        )
        parser.add_argument("--limit", type=int, default=None, help="at most N cases per data folder")
        parser.add_argument("--out", type=Path, required=True, help="output folder")
        parser.add_argument(
            "--variant",
            action="append",
            choices=sorted(VARIANTS),
            default=[],
            help="engine variant(s) for ablations; each is written under OUTDIR/<variant>/ (default: full)",
        )
        parser.add_argument(
            "--folds",
            action="append",
            choices=sorted(FOLDINGS),
            default=[],
            help="calibrate in-fold and out-of-fold by dataset, recording day or fault kind (repeatable)",
        )
        parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        folders: list[Path] = options["data"] or (
            [Path(settings.ROOTLINE_DATA_DIR)] if settings.ROOTLINE_DATA_DIR else []
        )
        missing = [str(d) for d in folders if not (d / "cases_index.csv").is_file()]
        if not folders or missing:
            raise CommandError(f"--data: no cases_index.csv in {', '.join(missing) or 'None'}", returncode=2)
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit: must be at least 1", returncode=2)
        if options["jobs"] < 1:
            raise CommandError("--jobs: must be at least 1", returncode=2)
        splits = options["split"] or ["dev"]
        selections = [
            Selection(Path(data), split, tuple(options["dataset"]), options["limit"])
            for data in folders
            for split in splits
        ]
        try:
            counts = [len(s.refs()) for s in selections]
        except (CaseIndexError, ValueError) as exc:
            raise CommandError(str(exc), returncode=2) from None
        selections = [s for s, n in zip(selections, counts, strict=True) if n]
        if not selections:
            raise CommandError("no case matches --split/--dataset", returncode=2)
        verbosity = int(options["verbosity"])

        def report_case(row: CaseRow) -> None:
            if verbosity >= 1:
                self.stdout.write(
                    f"{row.key:32s} {row.case_id:42s} rank={row.rank or '-':>2} {row.exit:24s} "
                    f"{row.tier:12s} {row.seconds:6.2f}s"
                )

        variants = options["variant"] or ["full"]
        cards = {}
        for name in variants:
            out = options["out"] if len(variants) == 1 else options["out"] / name
            rows = [
                row
                for s in selections
                for row in run(s, VARIANTS[name], on_case=report_case, jobs=options["jobs"])
            ]
            cards[name] = write(rows, out)
            for by in options["folds"]:
                folded = report(cross_fit(rows, by))
                (out / f"folds-{by}.json").write_text(json.dumps(folded, indent=2, sort_keys=True) + "\n")
                self.stdout.write(table(folded))
        self.stdout.write(
            json.dumps(cards if len(variants) > 1 else cards[variants[0]], indent=2, sort_keys=True)
        )
