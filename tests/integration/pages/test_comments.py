"""Comments on the incident page: listed for every role, added by responders and approvers through
rca.incidents.comments (the API's service), shown escaped."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from rca.incidents.comments import add_comment
from rca.incidents.models import COMMENT_MAX_LENGTH, AuditEvent, Comment, Incident
from tests.integration.api import factories

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def incident() -> Incident:
    return factories.investigation().incident


def _page(incident: Incident) -> str:
    return f"/incidents/{incident.pk}/"


def _post(incident: Incident) -> str:
    return f"/incidents/{incident.pk}/comments/"


@pytest.mark.parametrize("role", ["responder", "approver"])
def test_a_responder_or_approver_comments_and_is_sent_back(
    client_as: Callable[[str | None], Client], incident: Incident, role: str
) -> None:
    client = client_as(role)
    page = client.get(_page(incident)).content.decode()
    assert 'id="comment-form"' in page
    assert f'action="{_post(incident)}"' in page
    assert 'name="csrfmiddlewaretoken"' in page
    response = client.post(_post(incident), {"body": "  pool resized at 09:58 \n"})
    assert response.status_code == 302
    assert response["Location"] == _page(incident)  # post / redirect / get
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["Comment added."]
    comment = Comment.objects.get()
    assert comment.body == "pool resized at 09:58"
    assert AuditEvent.objects.filter(verb="incident.commented", target_id=str(incident.pk)).count() == 1
    shown = client.get(_page(incident)).content.decode()
    assert "pool resized at 09:58" in shown
    assert comment.author.username in shown


def test_a_viewer_sees_the_comments_but_no_form(viewer: Client, incident: Incident) -> None:
    add_comment(incident, factories.user("responder", name="rita"), "checked the pool")
    page = viewer.get(_page(incident)).content.decode()
    assert 'id="comments"' in page
    assert "checked the pool" in page
    assert "rita" in page
    assert 'id="comment-form"' not in page
    assert "Only a responder or an approver may comment." in page


def test_a_forged_post_by_a_viewer_is_403_and_changes_nothing(viewer: Client, incident: Incident) -> None:
    response = viewer.post(_post(incident), {"body": "let me"})
    assert response.status_code == 403
    html = response.content.decode()
    assert 'id="comment-error"' in html
    assert "only a responder (or higher) may comment" in html
    assert 'id="comment-form"' not in html
    assert not Comment.objects.exists()
    assert list(AuditEvent.objects.values_list("verb", flat=True)) == ["incident.comment_refused"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("", "a comment cannot be empty"),
        ("  \r\n\t ", "a comment cannot be empty"),
        ("x" * (COMMENT_MAX_LENGTH + 1), f"a comment is at most {COMMENT_MAX_LENGTH:,} characters"),
    ],
    ids=["empty", "whitespace", "too-long"],
)
def test_a_bad_body_shows_the_error_and_stores_nothing(
    client_as: Callable[[str | None], Client], incident: Incident, body: str, reason: str
) -> None:
    client = client_as("responder")
    response = client.post(_post(incident), {"body": body})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="comment-error"' in html
    assert reason in html
    assert 'id="comment-form"' in html  # the form is there to try again
    assert not Comment.objects.exists()
    assert not AuditEvent.objects.exists()


def test_an_over_long_body_is_kept_in_the_form(
    client_as: Callable[[str | None], Client], incident: Incident
) -> None:
    text = "w" * (COMMENT_MAX_LENGTH + 5)
    response = client_as("responder").post(_post(incident), {"body": text})
    assert response.status_code == 400
    assert text in response.content.decode()  # nothing typed is lost


def test_script_in_a_comment_is_shown_escaped(
    client_as: Callable[[str | None], Client], incident: Incident
) -> None:
    hostile = "<script>alert('x')</script><img src=x onerror=alert(1)> & done"
    client = client_as("responder")
    assert client.post(_post(incident), {"body": hostile}).status_code == 302
    html = client_as("viewer").get(_page(incident)).content.decode()
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert (
        "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; &amp; done"
        in html
    )


def test_the_comment_form_needs_a_csrf_token(incident: Incident) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(factories.user("responder"))
    refused = client.post(_post(incident), {"body": "no token"})
    assert refused.status_code == 403
    assert not Comment.objects.exists()
    token = client.get(_page(incident)).context["csrf_token"]
    accepted = client.post(_post(incident), {"body": "with token", "csrfmiddlewaretoken": token})
    assert accepted.status_code == 302
    assert Comment.objects.get().body == "with token"


def test_get_is_not_allowed_and_unknown_incidents_are_404(
    client_as: Callable[[str | None], Client], incident: Incident
) -> None:
    client = client_as("responder")
    assert client.get(_post(incident)).status_code == 405
    assert client.post("/incidents/999999/comments/", {"body": "hello?"}).status_code == 404
    assert not Comment.objects.exists()
