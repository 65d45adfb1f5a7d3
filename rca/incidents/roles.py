"""Granting roles: a role is a Django group of the same name (`rca.incidents.approvals.Role`), and a
user holds one role at a time, the higher ones including the lower ones' rights."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser, Group
from django.db import transaction

from rca.incidents.approvals import Role
from rca.incidents.services import record_audit


@transaction.atomic
def grant(user: AbstractUser, role: Role | None) -> None:
    """Make `role` the one role `user` holds (None: no role); audited as `user.role_set`."""
    user.groups.remove(*Group.objects.filter(name__in=[r.value for r in Role]))
    if role is not None:
        user.groups.add(Group.objects.get_or_create(name=role.value)[0])
    record_audit(
        "user.role_set", user, actor_label="manage.py", detail={"role": role.value if role else None}
    )
