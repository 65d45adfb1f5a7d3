"""Comments on incidents through the API: list (viewer), add (responder, approver), the audit event."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from rest_framework.test import APIClient

from rca.incidents import comments as comment_service
from rca.incidents.models import COMMENT_MAX_LENGTH, AuditEvent, Comment, Incident
from rca.incidents.tokens import issue_token
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def url(incident: Incident | int) -> str:
    pk = incident.pk if isinstance(incident, Incident) else incident
    return f"/api/v1/incidents/{pk}/comments/"


def audit(incident: Incident) -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(target_type="incidents.incident", target_id=str(incident.pk)).order_by(
            "at", "id"
        )
    )


@pytest.fixture
def incident() -> Incident:
    return factories.investigation().incident


@pytest.mark.parametrize("role", ["responder", "approver"])
def test_a_responder_or_approver_comments(
    client_for: Callable[[str | None], APIClient], incident: Incident, role: str
) -> None:
    api = client_for(role)
    response = api.post(url(incident), {"body": "  payments-db pool was resized at 09:58\n"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    comment = Comment.objects.get()
    assert body == {
        "id": comment.pk,
        "incident": incident.pk,
        "author": comment.author.username,
        "body": "payments-db pool was resized at 09:58",  # surrounding whitespace dropped
        "created_at": body["created_at"],
    }
    assert comment.author.groups.get().name == role


def test_the_list_is_oldest_first_and_paginated(
    viewer: APIClient, responder: APIClient, incident: Incident
) -> None:
    for n in range(3):
        assert responder.post(url(incident), {"body": f"note {n}"}, format="json").status_code == 201
    other = factories.incident()
    responder.post(url(other), {"body": "elsewhere"}, format="json")
    listed = viewer.get(url(incident)).json()
    assert listed["count"] == 3
    assert [c["body"] for c in listed["results"]] == ["note 0", "note 1", "note 2"]
    page = viewer.get(url(incident), {"page_size": 2, "page": 2}).json()
    assert (page["count"], [c["body"] for c in page["results"]]) == (3, ["note 2"])
    assert page["previous"] is not None
    assert page["next"] is None
    assert viewer.get(url(incident), {"page": 9}).status_code == 404  # as on every other list


def test_the_incident_detail_carries_the_comments(
    viewer: APIClient, responder: APIClient, incident: Incident
) -> None:
    assert viewer.get(f"/api/v1/incidents/{incident.pk}/").json()["comments"] == []
    responder.post(url(incident), {"body": "first"}, format="json")
    responder.post(url(incident), {"body": "second"}, format="json")
    detail = viewer.get(f"/api/v1/incidents/{incident.pk}/").json()
    assert [c["body"] for c in detail["comments"]] == ["first", "second"]
    assert detail["comments"] == viewer.get(url(incident)).json()["results"]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"body": ""}, "may not be blank"),
        ({"body": " \n\t "}, "may not be blank"),
        ({"body": "x" * (COMMENT_MAX_LENGTH + 1)}, f"no more than {COMMENT_MAX_LENGTH} characters"),
        ({}, "required"),
        ({"body": None}, "may not be null"),
        ({"body": ["a list"]}, "Not a valid string"),
        ({"body": "a\x00b"}, "Null characters are not allowed"),
    ],
    ids=["empty", "whitespace", "too-long", "missing", "null", "list", "nul"],
)
def test_a_bad_body_is_400_naming_the_field(
    responder: APIClient, incident: Incident, payload: dict[str, object], reason: str
) -> None:
    response = responder.post(url(incident), payload, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert list(errors) == ["body"]
    assert reason in errors["body"]
    assert not Comment.objects.exists()
    assert audit(incident) == []  # a typo is not an attempt to exceed a role


def test_the_longest_body_is_accepted_after_stripping(responder: APIClient, incident: Incident) -> None:
    text = "y" * COMMENT_MAX_LENGTH
    response = responder.post(url(incident), {"body": f"\n{text}  "}, format="json")
    assert response.status_code == 201
    assert Comment.objects.get().body == text


def test_a_lone_surrogate_is_400_not_500(responder: APIClient, incident: Incident) -> None:
    raw = b'{"body": "broken \\ud800 text"}'  # valid JSON, but not text PostgreSQL can store
    response = responder.generic("POST", url(incident), raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert list(response.json()["errors"]) == ["body"]
    assert not Comment.objects.exists()


def test_a_body_that_is_not_an_object_is_400(responder: APIClient, incident: Incident) -> None:
    response = responder.post(url(incident), ["body"], format="json")
    assert response.status_code == 400
    assert not Comment.objects.exists()


def test_unknown_incident_is_404(viewer: APIClient, responder: APIClient) -> None:
    assert viewer.get(url(999999)).status_code == 404
    assert responder.post(url(999999), {"body": "hello?"}, format="json").status_code == 404
    assert not Comment.objects.exists()


def test_a_viewer_is_refused_and_the_refusal_is_audited(viewer: APIClient, incident: Incident) -> None:
    response = viewer.post(url(incident), {"body": "let me"}, format="json")
    assert response.status_code == 403
    assert response.json() == {"detail": "only a responder (or higher) may comment", "code": "forbidden"}
    assert not Comment.objects.exists()
    (event,) = audit(incident)
    assert event.verb == "incident.comment_refused"
    assert event.actor_label.startswith("viewer-")
    assert event.detail["code"] == "forbidden"


def test_anonymous_and_no_role_are_refused(
    client_for: Callable[[str | None], APIClient], incident: Incident
) -> None:
    anonymous = APIClient()
    for method in ("get", "post"):
        response = getattr(anonymous, method)(url(incident), {"body": "hi"}, format="json")
        assert response.status_code == 401
        assert response.has_header("WWW-Authenticate")
    norole = client_for("norole")
    assert norole.get(url(incident)).status_code == 403
    assert norole.post(url(incident), {"body": "hi"}, format="json").status_code == 403
    assert not Comment.objects.exists()


@pytest.mark.parametrize("source", ["alertmanager", "generic"])
def test_an_intake_token_cannot_comment_or_read(incident: Incident, source: str) -> None:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(f'comment-{source}', source).token}")
    assert api.post(url(incident), {"body": "from a webhook"}, format="json").status_code == 401
    assert api.get(url(incident)).status_code == 401
    assert not Comment.objects.exists()


def test_a_comment_writes_one_audit_event(responder: APIClient, incident: Incident) -> None:
    response = responder.post(url(incident), {"body": "rolled back the pool change"}, format="json")
    comment = Comment.objects.get()
    (event,) = audit(incident)
    assert (event.verb, event.actor_id, event.actor_label) == (
        "incident.commented",
        comment.author_id,
        response.json()["author"],
    )
    assert event.detail == {"comment": comment.pk, "body": "rolled back the pool change"}


def test_the_comment_and_its_audit_event_commit_together(
    monkeypatch: pytest.MonkeyPatch, incident: Incident
) -> None:
    """Should writing the audit event fail, the comment is not stored either (one transaction)."""
    author = factories.user("responder")

    def broken(*args: object, **kwargs: object) -> AuditEvent:
        raise RuntimeError("audit store unavailable")

    monkeypatch.setattr(comment_service, "record_audit", broken)
    with pytest.raises(RuntimeError, match="audit store unavailable"):
        comment_service.add_comment(incident, author, "lost?")
    assert not Comment.objects.exists()


def test_the_database_refuses_blank_and_over_long_bodies(incident: Incident) -> None:
    """Rows written around the service still cannot hold what it refuses."""
    author = factories.user("responder")
    for body in (" \n ", "z" * (COMMENT_MAX_LENGTH + 1)):
        with pytest.raises(IntegrityError), transaction.atomic():
            Comment.objects.create(incident=incident, author=author, body=body)


def test_there_is_no_edit_or_delete(responder: APIClient, incident: Incident) -> None:
    responder.post(url(incident), {"body": "kept"}, format="json")
    comment = Comment.objects.get()
    for method in ("put", "patch", "delete"):
        response = getattr(responder, method)(url(incident), {"body": "changed"}, format="json")
        assert response.status_code == 405, method
        item = getattr(responder, method)(f"{url(incident)}{comment.pk}/", {"body": "x"}, format="json")
        assert item.status_code == 404, method
    assert Comment.objects.get().body == "kept"


def test_session_authenticated_comments_need_csrf(incident: Incident) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(factories.user("responder"))
    refused = client.post(url(incident), {"body": "csrf?"}, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    assert not Comment.objects.exists()
    client.get("/login/")  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    accepted = client.post(url(incident), {"body": "csrf!"}, format="json", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201
    assert Comment.objects.get().body == "csrf!"


def test_the_admin_shows_comments_read_only(incident: Incident) -> None:
    comment = comment_service.add_comment(incident, factories.user("responder"), "seen in the admin")
    admin = Client()
    admin.force_login(factories.user(None, is_staff=True, is_superuser=True))
    assert "seen in the admin" in admin.get(f"/admin/incidents/comment/{comment.pk}/change/").content.decode()
    assert admin.get("/admin/incidents/comment/").status_code == 200
    assert admin.get("/admin/incidents/comment/add/").status_code == 403
    assert admin.post(f"/admin/incidents/comment/{comment.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Comment.objects.filter(pk=comment.pk).exists()
