"""`manage.py inject`: write a synthetic suite of faults injected into recorded normal telemetry."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from rca.evaluation.inject import MAX_ENTITIES, Fault, Kind, Skipped, Written, generate
from rca.evaluation.injectors import INJECTORS


class Command(BaseCommand):
    help = (
        "Inject faults into recorded normal telemetry; writes OUTDIR/cases_index.csv, "
        "OUTDIR/propagation_paths.csv and the case folders in each dataset's own layout."
    )

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data", type=Path, default=None, help="folder with the public datasets")
        parser.add_argument("--out", type=Path, required=True, help="output folder (the suite's data folder)")
        parser.add_argument(
            "--seed", type=int, default=0, help="random seed (magnitude, onset, noise, sample)"
        )
        parser.add_argument(
            "--system",
            action="append",
            choices=sorted(INJECTORS),
            default=[],
            help="system(s) (default: all)",
        )
        parser.add_argument(
            "--kind",
            action="append",
            choices=[k.value for k in Kind],
            default=[],
            help="kind(s) (default: all)",
        )
        parser.add_argument("--entity", action="append", default=[], help="only these entities (repeatable)")
        parser.add_argument(
            "--limit",
            type=int,
            default=MAX_ENTITIES,
            help=f"entities per system and kind, a seeded sample if more (default {MAX_ENTITIES})",
        )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        data: Path | None = options["data"] or settings.ROOTLINE_DATA_DIR
        if data is None or not (Path(data) / "cases_index.csv").is_file():
            raise CommandError(f"--data: no cases_index.csv in {data}", returncode=2)
        if options["limit"] < 1:
            raise CommandError("--limit: must be at least 1", returncode=2)
        out: Path = options["out"]
        if out.resolve() == Path(data).resolve():
            raise CommandError("--out: must not be the public data folder", returncode=2)
        systems = options["system"] or sorted(INJECTORS)
        kinds = [Kind(k) for k in options["kind"]] or list(Kind)
        verbosity = int(options["verbosity"])

        def report(fault: Fault, written: Written | Skipped) -> None:
            if verbosity >= 2:
                state = f"skipped: {written.reason}" if isinstance(written, Skipped) else "written"
                self.stdout.write(f"{fault.case_id:40s} {fault.entity:50s} {state}")

        injectors = [INJECTORS[name](Path(data)) for name in systems]
        suite = generate(injectors, out, options["seed"], kinds, options["limit"], options["entity"], report)
        counts = Counter((w.row["case_id"].split("/")[1], w.row["fault_type"]) for w in suite.cases)
        for (system, kind), n in sorted(counts.items()):
            self.stdout.write(f"{system:10s} {kind:12s} {n:4d} cases")
        reasons = Counter(skipped.reason for _, skipped in suite.skipped)
        self.stdout.write(f"{len(suite.cases)} cases written to {out}, {len(suite.skipped)} skipped")
        for reason, n in sorted(reasons.items()):
            self.stdout.write(f"  {n:4d} skipped: {reason}")
