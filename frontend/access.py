"""Who may see the pages: a signed-in user holding at least the viewer role.

Signing in is not enough: an account without a role (a new SSO user, say) sees no incident data, as
in the API, where such a caller gets 403.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Concatenate, ParamSpec

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from rca.incidents.approvals import Role, has_role

P = ParamSpec("P")
View = Callable[Concatenate[HttpRequest, P], HttpResponse]


def viewer_required(view: View[P]) -> View[P]:
    """Send anonymous users to the login page; answer 403 to a signed-in user without a role."""

    @wraps(view)
    def guarded(request: HttpRequest, /, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        if not has_role(request.user, Role.VIEWER):
            return render(request, "frontend/no_role.html", status=403)
        return view(request, *args, **kwargs)

    return login_required(guarded)
