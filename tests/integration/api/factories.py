"""Rows for API tests: users with roles, incidents, finished investigations and proposals.

Investigations are written as the engine's `store_result` left them before the result document
existed (rows and JSON fields only, in the document's shapes), without running the engine; the pages
and the API read them through `rca.incidents.results`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

from django.contrib.auth.models import Group, User

from rca.core.actions import ActionTier, map_outcome, max_allowed_tier
from rca.core.gate import GateExit
from rca.core.grounding import Grounding
from rca.core.modes import Mode
from rca.incidents.models import ActionProposal, Evidence, Hypothesis, Incident, Investigation

_seq = count(1)
ONSET = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def user(role: str | None, name: str | None = None, **extra: Any) -> User:
    """A user in the group `role` (None: no role at all)."""
    account = User.objects.create_user(
        name or f"{role or 'norole'}-{next(_seq)}", password="pw-123456!", **extra
    )
    if role:
        # get_or_create: a transactional test's flush removes the rows migration 0004_roles made.
        account.groups.add(Group.objects.get_or_create(name=role)[0])
    return account


def incident(**fields: Any) -> Incident:
    """An open Alertmanager incident on `checkout`."""
    n = next(_seq)
    values: dict[str, Any] = {
        "title": f"checkout 5xx above 5% #{n}",
        "status": Incident.Status.OPEN,
        "severity": "critical",
        "onset": ONSET,
        "symptom_entity": "checkout",
        "fingerprint": f"fp-{n}",
        "group_key": f"group-{n}",
        "source": "alertmanager",
        "labels": {"alertname": "HighErrorRate", "job": "shop/checkout"},
    }
    values.update(fields)
    return Incident.objects.create(**values)


def investigation(
    of: Incident | None = None,
    *,
    confident: bool = True,
    grounding: Grounding = Grounding.GROUNDED,
    raw_confidence: float = 0.92,
    root: str = "payments-db",
    fault_kind: str = "cpu_saturation",
    status: str = Investigation.Status.SUCCEEDED,
) -> Investigation:
    """A finished investigation of `of` with a hypothesis tree, path and chain, as the engine stores it."""
    target = of or incident()
    exit_ = GateExit.CONFIDENT if confident else GateExit.NO_CONFIDENT_ROOT_CAUSE
    outcome = map_outcome(exit_, raw_confidence, grounding, Mode.ACTIVE)
    n = target.investigations.count() + 1
    evidence_item = {
        "tool": "metrics.cpu",
        "hypothesis": "h1",
        "summary": f"{root} cpu 97% from onset",
        "verdict": "supports",
        "source": "metrics",
        "observed_at": ONSET.timestamp(),
        "signals": {"cpu": 0.97},
    }
    citation = (
        {"kind": "commit", "ref": "abc123", "entity": root, "at": ONSET.timestamp() - 60, "title": "pool"}
        if grounding is Grounding.GROUNDED
        else None
    )
    if status != Investigation.Status.SUCCEEDED:
        return Investigation.objects.create(
            incident=target, attempt_key=f"{target.pk}:{n}", status=status, progress={"turn": 2}
        )
    inv = Investigation.objects.create(
        incident=target,
        attempt_key=f"{target.pk}:{n}",
        status=status,
        started_at=ONSET + timedelta(minutes=1),
        finished_at=ONSET + timedelta(minutes=2),
        gate={
            "state": "exit",
            "exit": exit_.value,
            "clause": "validated" if confident else "budget",
            "reason": "a hypothesis is validated" if confident else "budget exhausted after 10 turns",
            "validated_count": 1 if confident else 0,
            "root_cause": "h1" if confident else None,
            "auto_remediates": False,
            "mode": "active",
        },
        exit=exit_.value,
        raw_confidence=raw_confidence,
        capped_confidence=outcome.confidence.capped,
        grounding=grounding.value,
        tier=outcome.tier.value,
        outcome=outcome.kind.value,
        root_cause_entity=root if confident else "",
        root_cause_kind=fault_kind if confident else "",
        candidates=[{"entity": root, "fault_kind": fault_kind, "score": 0.8, "belief": "origin"}],
        propagation_path=[
            {
                "cause": root,
                "effect": "checkout",
                "edge": True,
                "evidence": [evidence_item["summary"]],
                "verification": {
                    "verified": True,
                    "rules": {"structural": "pass", "statistical": "pass", "temporal": "pass"},
                    "failed": [],
                },
            }
        ],
        evidence_chain={
            "entity": root,
            "path": [root, "checkout"],
            "evidence": [evidence_item] if confident else [],
            "citation": citation,
            "subscores": {"hard": 1.0},
            "grounding": grounding.value,
        },
        beliefs={root: "origin", "checkout": "symptom"},
        progress={"turn": 4, "steps": [], "stop_reason": "validated" if confident else "budget exhausted"},
        turns=4,
    )
    h1 = Hypothesis.objects.create(
        investigation=inv,
        key="h1",
        entity=root,
        fault_kind=fault_kind,
        state="validated" if confident else "inconclusive",
        prior=0.6,
        rank=0,
    )
    Hypothesis.objects.create(
        investigation=inv,
        key="h2",
        entity="checkout",
        parent_key="h1",
        state="invalidated",
        prior=0.2,
        rank=1,
    )
    Evidence.objects.create(
        hypothesis=h1,
        seq=0,
        tool="metrics.cpu",
        target=root,
        source="metrics",
        verdict="supports" if confident else "inconclusive",
        summary=evidence_item["summary"],
        observed_at=ONSET,
        signals={"cpu": 0.97},
    )
    return inv


def proposal(of: Investigation | None = None, **fields: Any) -> ActionProposal:
    """The proposal `store_result` writes for `of` (fields override, e.g. a tampered tier)."""
    inv = of or investigation()
    exit_ = GateExit(inv.exit) if inv.exit else GateExit.NO_CONFIDENT_ROOT_CAUSE
    values: dict[str, Any] = {
        "investigation": inv,
        "tier": inv.tier or ActionTier.NOTIFY.value,
        "max_allowed_tier": max_allowed_tier(exit_, Grounding(inv.grounding or "ungrounded")).value,
        "title": f"{inv.root_cause_entity or 'checkout'} incident",
        "body": "evidence ...",
    }
    values.update(fields)
    return ActionProposal.objects.create(**values)


def investigated_case(dataset: str, case_id: str) -> Incident:
    """A public recorded case imported and investigated by the engine, synchronously (no worker);
    the calling test is skipped when the datasets are not there."""
    import pytest
    from django.core.management import call_command

    from rca.incidents.investigations import run_investigation
    from tests.conftest import REPO_ROOT

    data = REPO_ROOT.parent / "shared" / "data"
    if not (data / "cases_index.csv").is_file():
        pytest.skip(f"public datasets not found at {data}")
    call_command("import_case", dataset, case_id, "--data", str(data), verbosity=0)
    incident = Incident.objects.get(recorded_case__case_id=case_id)
    run_investigation(incident.investigations.get().pk)
    return incident


def configure_repository(settings: Any) -> None:
    """A GitHub repository in the actions settings (dry run), so a patch or pull request can be built
    and approving one is about roles and state. Its address refuses connections at once (port 9,
    discard, has no listener here), so a page's preview fails fast instead of reaching the internet."""
    from dataclasses import replace

    from rca.integrations.github.config import GitHubConfig

    github = GitHubConfig(url="http://127.0.0.1:9", repo="acme/shop", token="test-token")
    settings.ROOTLINE_ACTIONS = replace(settings.ROOTLINE_ACTIONS, dry_run=True, github=github)
