"""The installation's monthly model ceiling, end to end: this month's investigations in PostgreSQL set
what an investigation may spend, at the ceiling the Anthropic policy fails closed, and the incident
page says why. The model's answers are recorded exchanges (tests/fixtures/anthropic); nothing reaches
the network.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import respx
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from rca.config import PolicyConfig
from rca.incidents.investigations import month_spend, run_investigation
from rca.incidents.models import Incident, Investigation
from rca.investigation.policy import Spend
from tests.integration.api import factories
from tests.integration.test_metrics import scrape
from tests.unit.investigation.test_anthropic_policy import API, KEY, RespxTransport, answers, recorded

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
POLICY = PolicyConfig(kind="anthropic", api_key=KEY, retries=0)


@contextmanager
def model(monkeypatch: pytest.MonkeyPatch, exchanges: list[dict[str, Any]]) -> Iterator[respx.Router]:
    """The app's Anthropic client answered with these recorded exchanges, in order; any other request
    fails, and every exchange must be used."""
    real = anthropic.Anthropic
    with respx.mock(assert_all_called=bool(exchanges), assert_all_mocked=True) as router:
        if exchanges:  # else any request is unmocked, and fails
            router.post(API).mock(side_effect=answers(exchanges))
        transport = RespxTransport(router)
        monkeypatch.setattr(
            anthropic, "Anthropic", lambda **kw: real(**kw, http_client=httpx2.Client(transport=transport))
        )
        yield router


@pytest.fixture
def incident() -> Incident:
    """The recorded RCD Sock Shop case carts-cpu/1, imported with its queued investigation."""
    if not (DATA / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {DATA}")
    call_command("import_case", "rcd-sockshop", "rcd/carts-cpu/1", "--data", str(DATA), verbosity=0)
    return Incident.objects.get(recorded_case__case_id="rcd/carts-cpu/1")


def _spent(finished_at: datetime, tokens: int = 0, cost_usd: float = 0.0) -> Investigation:
    """A finished investigation of another incident that used this much of the model."""
    done = factories.investigation()
    done.finished_at, done.tokens_in, done.tokens_out, done.cost_usd = finished_at, tokens, 0, cost_usd
    done.save()
    return done


def _month_start() -> datetime:
    return timezone.now().astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _page(incident: Incident) -> str:
    """The incident page as a viewer sees it."""
    viewer = Client()
    viewer.force_login(factories.user("viewer"))
    response = viewer.get(f"/incidents/{incident.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_at_the_ceiling_the_policy_fails_closed_and_the_page_says_why(
    settings: Any, monkeypatch: pytest.MonkeyPatch, incident: Incident
) -> None:
    settings.ROOTLINE_POLICY = replace(POLICY, monthly_cost_usd=5.0)
    _spent(timezone.now(), tokens=900_000, cost_usd=3.0)
    _spent(_month_start(), tokens=400_000, cost_usd=2.0)  # the month's first instant counts
    with model(monkeypatch, []) as api:  # no request may be sent
        investigation = run_investigation(incident.investigations.get().pk)
        assert api.calls.call_count == 0
    investigation.refresh_from_db()
    reason = "monthly cost ceiling reached ($5.0000 of $5.00 this month, UTC)"
    assert investigation.policy_failure == reason
    assert investigation.policy == "anthropic"
    assert investigation.exit == "no_confident_root_cause"
    assert investigation.root_cause_entity == ""  # the offline policy would name carts here
    assert (investigation.tokens_in, investigation.turns) == (0, 0)
    assert f"failed closed: {reason}" in _page(incident)
    samples = scrape(Client())
    assert samples["rootline_model_month_cost_usd"][()] == pytest.approx(5.0)
    assert samples["rootline_model_month_tokens"][()] == 1_300_000
    assert samples["rootline_model_monthly_ceiling_cost_usd"][()] == 5.0
    assert samples["rootline_model_monthly_ceiling_tokens"][()] == POLICY.monthly_tokens


def test_the_months_headroom_caps_the_budget_and_last_month_does_not_count(
    settings: Any, monkeypatch: pytest.MonkeyPatch, incident: Incident
) -> None:
    settings.ROOTLINE_POLICY = replace(POLICY, monthly_tokens=1_000_000)
    _spent(timezone.now(), tokens=997_000)  # 3,000 tokens left this month
    _spent(_month_start() - timedelta(microseconds=1), tokens=5_000_000, cost_usd=900.0)  # last month
    # the recorded case's first two turns (2,130 then 2,644 tokens); the second crosses the ceiling
    with model(monkeypatch, recorded("investigation_rcd")[:2]) as api:
        investigation = run_investigation(incident.investigations.get().pk)
        sent = [call.request.content for call in api.calls]
    investigation.refresh_from_db()
    assert len(sent) == 2
    assert b'"max_tokens":1024' in sent[0]
    assert b'"max_tokens":870' in sent[1]  # 3,000 - 2,130: no reply may ask for more than the month has
    reason = "monthly token ceiling reached (1001774 of 1000000 tokens this month, UTC)"
    assert investigation.policy_failure == reason
    assert (investigation.tokens_in, investigation.tokens_out) == (2012 + 2548, 118 + 96)
    assert investigation.turns == 1  # the proposal was examined; the reply over the ceiling was not acted on
    assert investigation.root_cause_entity == ""
    assert f"failed closed: {reason}" in _page(incident)


def test_month_spend_counts_the_calendar_month_in_utc() -> None:
    may_end = datetime(2024, 6, 1, tzinfo=UTC)
    last_of_may = _spent(may_end - timedelta(microseconds=1), tokens=100, cost_usd=0.5)
    _spent(may_end, tokens=20, cost_usd=0.25)
    _spent(datetime(2024, 12, 31, 23, 59, tzinfo=UTC), tokens=7, cost_usd=0.125)
    _spent(datetime(2025, 1, 1, tzinfo=UTC), tokens=3, cost_usd=1.0)
    assert month_spend(datetime(2024, 5, 3, tzinfo=UTC)) == Spend(100, 0.5)
    assert month_spend(datetime(2024, 6, 30, 23, 0, tzinfo=UTC)) == Spend(20, 0.25)
    # 00:30 on 1 June in UTC+2 is still May in UTC
    assert month_spend(datetime.fromisoformat("2024-06-01T00:30:00+02:00")) == Spend(100, 0.5)
    assert month_spend(datetime(2024, 12, 1, tzinfo=UTC)) == Spend(7, 0.125)
    assert month_spend(datetime(2024, 5, 3, tzinfo=UTC), exclude=last_of_may.pk) == Spend(0, 0.0)
