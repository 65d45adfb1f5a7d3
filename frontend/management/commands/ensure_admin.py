"""`manage.py ensure_admin`: a local admin user for the embedded default, printed on every run."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from typing_extensions import override


class Command(BaseCommand):
    help = "Create the local admin user if missing and print its credentials (kept in var/admin_password)."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        username: str = options["username"]
        path = settings.ROOTLINE_VAR_DIR / "admin_password"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_urlsafe(12))
            path.chmod(0o600)
        password = path.read_text().strip()
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(
            username=username, defaults={"is_staff": True, "is_superuser": True}
        )
        if created or not user.check_password(password):
            user.set_password(password)
            user.is_staff = user.is_superuser = True
            user.save()
        self.stdout.write(f"login: user {username!r}, password {password!r} (stored in {path})")
