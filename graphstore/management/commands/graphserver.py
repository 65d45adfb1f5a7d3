"""`manage.py graphserver start|stop|status`: the embedded ArcadeDB Bolt server."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from graphstore.launcher import GraphServerError, embedded_server


class Command(BaseCommand):
    help = "Start, stop or report the embedded ArcadeDB graph server (used when NEO4J_URI is unset)."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["start", "stop", "status"])

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.ROOTLINE_GRAPH.embedded:
            raise CommandError("NEO4J_URI is set: Rootline uses that server, not the embedded one")
        server = embedded_server()
        action = options["action"]
        if action == "start":
            try:
                pid = server.start()
            except GraphServerError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(f"graph server running on {server.uri} (pid {pid}, data {server.root})")
        elif action == "stop":
            stopped = server.stop()
            self.stdout.write("graph server stopped" if stopped else "graph server was not running")
        else:
            running = server.pid()
            if running is None:
                self.stdout.write("graph server not running")
            else:
                state = "answering" if server.answers() else "not answering"
                self.stdout.write(f"graph server pid {running} on {server.uri}: {state}")
