"""Page views; they read through services and render templates."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from rca.health import run_checks


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The first page: what Rootline is watching and the state of its dependencies."""
    return render(request, "frontend/home.html", {"checks": run_checks()})
