"""Users, roles and intake tokens created by an admin: `manage.py create_user` / `set_role`, and the
intake-token admin page that issues a token and shows it once."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from rca.incidents.approvals import Role, role_of
from rca.incidents.models import AuditEvent, IntakeToken
from rca.incidents.tokens import hash_token

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_user_with_a_role_prints_a_password_once_and_set_role_changes_it() -> None:
    out = run("create_user", "rita", "--role", "responder", "--email", "rita@example.org")
    password = re.search(r"password '([^']+)'", out)
    assert password is not None
    rita = User.objects.get(username="rita")
    assert rita.check_password(password.group(1))
    assert rita.email == "rita@example.org"
    assert role_of(rita) is Role.RESPONDER

    run("set_role", "rita", "approver")
    rita = User.objects.get(username="rita")  # a fresh object: role_of caches per instance
    assert list(rita.groups.values_list("name", flat=True)) == ["approver"]  # one role at a time
    assert role_of(rita) is Role.APPROVER
    run("set_role", "rita", "none")
    assert role_of(User.objects.get(username="rita")) is None
    assert AuditEvent.objects.filter(verb="user.role_set", target_id=str(rita.pk)).count() == 3


def test_refusals_are_one_line_errors() -> None:
    run("create_user", "rita", "--role", "viewer")
    with pytest.raises(CommandError, match="already exists"):
        run("create_user", "rita", "--role", "viewer")
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        run("set_role", "nobody", "viewer")
    with pytest.raises(CommandError):
        run("create_user", "vic", "--role", "root")


def test_an_admin_issues_an_intake_token_in_the_app_and_sees_it_once() -> None:
    admin = User.objects.create_superuser("boss", "boss@example.org", "pw-123456!")
    client = Client()
    client.force_login(admin)
    assert client.get("/admin/incidents/intaketoken/add/").status_code == 200
    response = client.post(
        "/admin/incidents/intaketoken/add/",
        {"name": "alertmanager-prod", "source": "alertmanager", "with_hmac": "on"},
        follow=True,
    )
    assert response.status_code == 200
    html = response.content.decode()
    shown = re.search(r"Token for alertmanager-prod: (\S+) HMAC secret: (\S+)", html)
    assert shown is not None
    record = IntakeToken.objects.get(name="alertmanager-prod")
    assert record.token_hash == hash_token(shown.group(1))
    assert record.hmac_salt
    assert (
        shown.group(1) not in client.get(f"/admin/incidents/intaketoken/{record.pk}/change/").content.decode()
    )
    # Users and their roles (groups) are created on Django's own admin pages.
    assert client.get("/admin/auth/user/add/").status_code == 200
    assert client.get("/admin/auth/group/").status_code == 200
