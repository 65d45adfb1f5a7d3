"""A live alert with no telemetry backend configured, in a real browser: the incident page says nothing was
examined and lists each backend's state, never "no anomaly"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from rca.incidents.intake import ingest_alertmanager
from rca.incidents.investigations import run_investigation
from rca.incidents.models import Incident
from tests.browser.conftest import PASSWORD, Session
from tests.integration.api import factories
from tests.integration.incidents.payloads import am_payload

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_the_page_says_nothing_was_examined_without_backends(
    sessions: list[Session], browser: Any, live_server: Any, artifacts: Path
) -> None:
    created = ingest_alertmanager(am_payload())
    incident = Incident.objects.get(pk=created.incidents_created[0])
    with override_settings(ROOTLINE_LIVE_TELEMETRY={}):
        run_investigation(incident.investigations.get().pk)
    factories.user("viewer", name="victor")
    account = User.objects.get(username="victor")
    account.set_password(PASSWORD)
    account.save()

    victor = Session(browser, live_server.url, artifacts, "victor")
    sessions.append(victor)
    victor.login("victor")
    victor.goto(f"/incidents/{incident.pk}/")
    victor.shot("nothing-examined")
    page = victor.page
    sentence = page.locator("#outcome-sentence").inner_text()
    assert sentence.startswith("Nothing was examined")
    assert "no anomaly" not in sentence.lower()
    assert "deviated" not in sentence
    states = page.locator("#backend-states").inner_text()
    for backend in ("prometheus", "loki", "tempo", "jaeger", "kubernetes"):
        assert f"{backend}: not configured" in states
    assert (
        page.locator("#guidance").inner_text().lower() == "what would help: nothing examined"
    )  # CSS capitals
