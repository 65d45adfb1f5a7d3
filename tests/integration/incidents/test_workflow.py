"""The responder workflow (rca.incidents.workflow) against PostgreSQL: who may acknowledge, assign,
resolve and reopen, in which states, and the audit trail each change and each refusal leaves."""

from __future__ import annotations

import pytest

from rca.incidents import workflow
from rca.incidents.models import AuditEvent, Incident
from rca.incidents.workflow import WorkflowError
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def verbs(incident: Incident) -> list[str]:
    return list(
        AuditEvent.objects.filter(target_type="incidents.incident", target_id=str(incident.pk))
        .order_by("at", "id")
        .values_list("verb", flat=True)
    )


def test_acknowledge_assign_resolve_reopen_each_audited() -> None:
    rita = factories.user("responder", name="rita")
    alan = factories.user("approver", name="alan")
    incident = factories.incident()

    workflow.acknowledge(incident, rita)
    assert incident.acknowledged_by == rita
    assert incident.acknowledged_at is not None
    workflow.assign(incident, rita, "alan")
    assert incident.assignee == alan
    workflow.resolve(incident, alan, "  pool resized  ")
    assert incident.status == Incident.Status.RESOLVED
    assert incident.resolved_at is not None
    workflow.reopen(incident, rita)
    assert incident.status == Incident.Status.OPEN
    assert incident.resolved_at is None
    assert incident.acknowledged_at is None
    assert incident.acknowledged_by is None
    assert incident.assignee == alan  # the owner stays with a reopened incident

    assert verbs(incident) == [
        "incident.acknowledged",
        "incident.assigned",
        "incident.resolved",
        "incident.reopened",
    ]
    events = AuditEvent.objects.filter(target_id=str(incident.pk)).order_by("at", "id")
    assert [e.actor_label for e in events] == ["rita", "rita", "alan", "rita"]
    assert events[1].detail == {"from": None, "to": "alan"}
    assert events[2].detail == {"reason": "resolved by hand", "note": "pool resized"}


@pytest.mark.parametrize("role", ["viewer", None])
def test_a_viewer_or_a_user_without_role_is_refused_and_the_refusal_audited(role: str | None) -> None:
    someone = factories.user(role)
    incident = factories.incident()
    for change, verb in (
        (lambda: workflow.acknowledge(incident, someone), "incident.acknowledge_refused"),
        (lambda: workflow.assign(incident, someone, None), "incident.assign_refused"),
        (lambda: workflow.resolve(incident, someone), "incident.resolve_refused"),
        (lambda: workflow.reopen(incident, someone), "incident.reopen_refused"),
    ):
        with pytest.raises(WorkflowError) as refused:
            change()
        assert refused.value.code == WorkflowError.FORBIDDEN
        assert verbs(incident)[-1] == verb
    incident.refresh_from_db()
    assert incident.status == Incident.Status.OPEN
    assert incident.acknowledged_at is None


def test_states_are_checked() -> None:
    rita = factories.user("responder", name="rita")
    incident = factories.incident()
    workflow.acknowledge(incident, rita)
    with pytest.raises(WorkflowError, match="already acknowledged by rita"):
        workflow.acknowledge(incident, rita)
    with pytest.raises(WorkflowError, match="only a resolved incident can be reopened"):
        workflow.reopen(incident, rita)
    workflow.resolve(incident, rita)
    with pytest.raises(WorkflowError, match="a resolved incident cannot be resolved"):
        workflow.resolve(incident, rita)
    with pytest.raises(WorkflowError, match="cannot be acknowledged"):
        workflow.acknowledge(incident, rita)
    assert verbs(incident).count("incident.resolve_refused") == 1


def test_reopen_is_refused_while_the_group_has_another_active_incident() -> None:
    rita = factories.user("responder")
    old = factories.incident(group_key="g")
    workflow.resolve(old, rita)
    newer = factories.incident(group_key="g")  # intake opened a new one for the group meanwhile
    with pytest.raises(WorkflowError, match=f"incident {newer.pk} of the same alert group is active"):
        workflow.reopen(old, rita)
    old.refresh_from_db()
    assert old.status == Incident.Status.RESOLVED


def test_assign_only_to_an_active_responder_or_higher() -> None:
    rita = factories.user("responder", name="rita")
    factories.user("viewer", name="vic")
    factories.user("approver", name="gone", is_active=False)
    incident = factories.incident()
    for name in ("vic", "gone", "nobody-such"):
        with pytest.raises(WorkflowError) as refused:
            workflow.assign(incident, rita, name)
        assert refused.value.code == WorkflowError.INVALID
        assert refused.value.field == "assignee"
    workflow.assign(incident, rita, "rita")
    with pytest.raises(WorkflowError, match="already assigned to rita"):
        workflow.assign(incident, rita, "rita")
    workflow.assign(incident, rita, None)
    assert incident.assignee is None
    assert list(workflow.assignable_users().values_list("username", flat=True)) == ["rita"]


def test_a_note_over_the_limit_is_refused_before_anything_changes() -> None:
    rita = factories.user("responder")
    incident = factories.incident()
    with pytest.raises(WorkflowError) as refused:
        workflow.resolve(incident, rita, "x" * (workflow.NOTE_MAX_LENGTH + 1))
    assert refused.value.field == "note"
    incident.refresh_from_db()
    assert incident.status == Incident.Status.OPEN
