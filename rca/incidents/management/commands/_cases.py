"""Shared plumbing of the recorded-case commands (a leading underscore: Django does not list it)."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from rca.telemetry.cases import INDEX_NAME, CaseIndexError, CaseRef, read_index

USAGE_EXIT = 2  # the conventional exit code for bad command-line arguments


def usage_error(message: str) -> CommandError:
    """A one-line error about an argument; the command exits with code 2."""
    return CommandError(message, returncode=USAGE_EXIT)


def _no_usage(file: IO[str] | None = None) -> None:
    return None


class CaseCommand(BaseCommand):
    """A command over the case index whose argument errors are one line on stderr and exit code 2."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # argparse prints the whole usage before its error line; the error line alone names the argument.
        parser.print_usage = _no_usage  # type: ignore[method-assign,assignment]
        return parser

    def add_data_argument(self, parser: CommandParser) -> None:
        """The --data option every case command takes."""
        parser.add_argument(
            "--data",
            metavar="DIR",
            help=f"folder holding {INDEX_NAME} and the datasets (default: ROOTLINE_DATA_DIR)",
        )

    def data_dir(self, options: dict[str, Any]) -> Path:
        """The data folder from --data or the setting; a usage error when there is none."""
        given: str | None = options["data"]
        if given is None:
            if settings.ROOTLINE_DATA_DIR is None:
                raise usage_error("--data: no data folder given and ROOTLINE_DATA_DIR is not set")
            return Path(settings.ROOTLINE_DATA_DIR)
        path = Path(given).expanduser()
        if not path.is_dir():
            raise usage_error(f"--data: {given} is not a folder")
        if not (path / INDEX_NAME).is_file():
            raise usage_error(f"--data: {given} has no {INDEX_NAME}")
        return path.resolve()

    def index(self, data_dir: Path) -> list[CaseRef]:
        """Every case of the index; a malformed index is a one-line error (exit code 1)."""
        try:
            return read_index(data_dir)
        except CaseIndexError as exc:
            raise CommandError(str(exc)) from None

    def check_datasets(self, refs: list[CaseRef], wanted: list[str], argument: str) -> None:
        """Refuse dataset names the index does not hold, naming `argument` and the known ones."""
        known = sorted({ref.dataset for ref in refs})
        for name in wanted:
            if name not in known:
                raise usage_error(f"{argument}: unknown dataset {name!r} (known: {', '.join(known)})")
