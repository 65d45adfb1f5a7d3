"""`manage.py set_role NAME viewer|responder|approver|none`: change the role a user holds."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from rca.incidents.approvals import Role
from rca.incidents.roles import grant


class Command(BaseCommand):
    help = "Give a user one role (viewer, responder, approver), or none (no access to incident data)."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("role", choices=[*(r.value for r in Role), "none"])

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        role = None if options["role"] == "none" else Role(options["role"])
        grant(user, role)
        self.stdout.write(f"user {user.get_username()!r} now holds {role.value if role else 'no role'}")
