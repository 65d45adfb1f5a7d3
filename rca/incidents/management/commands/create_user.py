"""`manage.py create_user NAME --role viewer|responder|approver [--email E]`: a user holding a role.

The password is generated and printed once (the user changes it after signing in); `set_role`
changes the role of an existing user later.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from rca.incidents.approvals import Role
from rca.incidents.roles import grant

# Bytes of randomness in a generated password (token_urlsafe: 16 characters), the same as the admin's.
PASSWORD_BYTES = 12


class Command(BaseCommand):
    help = "Create a user holding a role (viewer, responder, approver); prints a generated password once."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=[r.value for r in Role])
        parser.add_argument("--email", default="")

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        username: str = options["username"].strip()
        users = get_user_model()
        if not username:
            raise CommandError("USERNAME must not be empty")
        if users.objects.filter(username=username).exists():
            raise CommandError(f"a user named {username!r} already exists (change its role with set_role)")
        password = secrets.token_urlsafe(PASSWORD_BYTES)
        user = users.objects.create_user(username, options["email"], password)
        grant(user, Role(options["role"]))
        self.stdout.write(f"user {username!r} ({options['role']}), password {password!r}: shown once")
