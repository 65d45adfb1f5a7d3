"""Role permissions for the API; the roles themselves live in `rca.incidents.approvals`."""

from __future__ import annotations

from typing import Any, ClassVar

from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from typing_extensions import override

from rca.incidents.approvals import Role, has_role
from rca.incidents.models import IntakeToken


class _HasRole(BasePermission):
    role: ClassVar[Role]
    message = "You do not have the role this needs."

    def has_permission(self, request: Request, view: Any) -> bool:
        if not has_role(request.user, self.role):
            self.message = f"This needs the {self.role.value} role (or higher)."
            return False
        return True


class IsViewer(_HasRole):
    """Read access: viewer, responder, approver or superuser (the default for every API view)."""

    role = Role.VIEWER


class IsIntakeSender(BasePermission):
    """The request carried a valid intake token for the view's source (see IntakeTokenAuthentication)."""

    message = "An intake token for this webhook is required."

    @override
    def has_permission(self, request: Request, view: Any) -> bool:
        auth = request.auth
        return isinstance(auth, IntakeToken) and auth.source == view.intake_source
