"""`manage.py create_intake_token NAME --source alertmanager|generic [--hmac]`: a webhook credential.

The token (and the HMAC secret, with --hmac) is printed once; only its hash is stored.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from rca.incidents.models import IntakeToken
from rca.incidents.tokens import issue_token


class Command(BaseCommand):
    help = "Create a per-source intake token for the Alertmanager or generic webhook; prints it once."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="a unique name for the sender, e.g. alertmanager-prod")
        parser.add_argument("--source", required=True, choices=IntakeToken.SOURCES)
        parser.add_argument(
            "--hmac", action="store_true", help="also issue an HMAC secret to sign request bodies with"
        )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        name: str = options["name"].strip()
        limit = IntakeToken._meta.get_field("name").max_length or 0
        if not name or len(name) > limit:
            raise CommandError(f"NAME must be 1 to {limit} characters")
        if IntakeToken.objects.filter(name=name).exists():
            raise CommandError(f"an intake token named {name!r} already exists")
        issued = issue_token(name, options["source"], with_hmac=options["hmac"])
        self.stdout.write(f"token: {issued.token}")
        if issued.hmac_secret:
            self.stdout.write(f"hmac secret: {issued.hmac_secret}")
        self.stdout.write(
            "Store these now: they are not shown again. Send `Authorization: Bearer <token>`"
            + (" or `X-Rootline-Signature: sha256=<HMAC-SHA256 of the body>`" if issued.hmac_secret else "")
            + f" to /api/v1/webhooks/{issued.record.source}/."
        )
