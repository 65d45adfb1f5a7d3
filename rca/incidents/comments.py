"""Comments on incidents: who may add one, what a body must be, and the audit event that goes with it.

Used by the API and the pages alike, so the rules live here only:

* any role may read comments (the views require the viewer role); only a responder or an approver
  (a superuser counts as one) may add one, and a refused attempt is audited, as a refused decision is;
* a body is plain text: surrounding whitespace is dropped, and it must then be non-empty, at most
  `COMMENT_MAX_LENGTH` characters, and free of what PostgreSQL text cannot hold (NUL, lone surrogates);
* adding a comment writes the `incident.commented` AuditEvent in the same transaction;
* comments are append-only: there is no service to edit or delete one.
"""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet

from rca.incidents.approvals import Role, User, has_role
from rca.incidents.models import COMMENT_MAX_LENGTH, Comment, Incident
from rca.incidents.services import Refusal, record_audit

__all__ = ["COMMENT_MAX_LENGTH", "CommentError", "add_comment", "comments_of"]


class CommentError(Refusal):
    """A comment was refused; `code` is one of the class constants, `field` the input at fault."""

    FORBIDDEN = "forbidden"
    INVALID = "invalid"


def comments_of(incident: Incident) -> QuerySet[Comment]:
    """The incident's comments, oldest first, with their authors."""
    return Comment.objects.filter(incident=incident).select_related("author").order_by("created_at", "id")


def clean_body(body: object) -> str:
    """`body` stripped of surrounding whitespace; raises `CommentError` (invalid, field "body") when it
    is not text, is empty, is over `COMMENT_MAX_LENGTH` characters or holds what text cannot."""
    if not isinstance(body, str):
        raise CommentError(CommentError.INVALID, "a comment must be text", field="body")
    text = body.strip()
    if not text:
        raise CommentError(CommentError.INVALID, "a comment cannot be empty", field="body")
    if len(text) > COMMENT_MAX_LENGTH:
        raise CommentError(
            CommentError.INVALID,
            f"a comment is at most {COMMENT_MAX_LENGTH:,} characters (this one has {len(text):,})",
            field="body",
        )
    if "\x00" in text:
        raise CommentError(CommentError.INVALID, "NUL characters are not allowed", field="body")
    try:
        text.encode()
    except UnicodeEncodeError as exc:  # a lone surrogate, e.g. from a JSON "\ud800" escape
        raise CommentError(
            CommentError.INVALID, f"{text[exc.start]!a} is not a character", field="body"
        ) from exc
    return text


def add_comment(incident: Incident, user: User, body: object) -> Comment:
    """Add `body` as `user`'s comment on `incident` (responder or approver) and audit it.

    Raises `CommentError`: forbidden (audited as `incident.comment_refused`) or invalid (nothing is
    written: a malformed body is the caller's typo, not an attempt to exceed a role).
    """
    actor = user if isinstance(user, AbstractBaseUser) else None
    if actor is None or not has_role(actor, Role.RESPONDER):
        message = f"only a {Role.RESPONDER.value} (or higher) may comment"
        record_audit(
            "incident.comment_refused",
            incident,
            actor=actor,
            actor_label="" if actor else "anonymous",
            detail={"code": CommentError.FORBIDDEN, "message": message},
        )
        raise CommentError(CommentError.FORBIDDEN, message)
    text = clean_body(body)
    with transaction.atomic():
        comment = Comment.objects.create(incident=incident, author_id=actor.pk, body=text)
        record_audit(
            "incident.commented", incident, actor=actor, detail={"comment": comment.pk, "body": text}
        )
    return comment
