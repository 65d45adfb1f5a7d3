"""`manage.py sync_graph [--since ISO8601]`: rebuild the graph projection from the relational database."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from graphstore.errors import GraphUnavailable
from graphstore.sync import rebuild
from rca.incidents.management.commands._cases import usage_error


def parse_since(value: str) -> datetime:
    """An ISO-8601 date or date-time; a naive one is taken as UTC. Raises a usage error (exit 2)."""
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise usage_error(
            f"--since: {value!r} is not an ISO-8601 date or time (e.g. 2024-05-01T10:00:00Z)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = (
        "Re-project each incident's latest finished investigation into the graph. Without --since, "
        "also removes incidents that no finished investigation backs."
    )

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--since",
            metavar="ISO8601",
            help="only investigations finished at or after this time (naive times are UTC)",
        )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        since = parse_since(options["since"]) if options["since"] is not None else None
        try:
            report = rebuild(since)
        except GraphUnavailable as exc:
            raise CommandError(str(exc)) from None
        scope = f" finished since {since.isoformat()}" if since is not None else ""
        self.stdout.write(
            f"projected {report.incidents} incidents{scope}: {report.hypotheses} hypotheses, "
            f"{report.evidence} evidence items, {report.root_causes} root causes, {report.hops} hops; "
            f"pruned {report.pruned} incidents; {report.statements} statements in {report.elapsed_s:.2f} s"
        )
