"""Intake credentials: issue a per-source token, verify a bearer token or an HMAC-signed body.

A sender authenticates on its webhook in either of two ways:

* `Authorization: Bearer <token>`: the token is hashed and looked up (it carries 256 random bits, so
  SHA-256 suffices and the lookup by hash reveals nothing a guess would not);
* `X-Rootline-Signature: sha256=<hex>`: HMAC-SHA256 of the raw request body under the token's HMAC
  secret. The secret is derived from a per-token salt and SECRET_KEY (so it is never stored and the
  table alone cannot forge a signature); rotating SECRET_KEY therefore invalidates HMAC secrets.

Every comparison is constant-time. Replaying a signed body is harmless: intake is idempotent.

A verified bearer token is remembered by the web process for ROOTLINE_INTAKE_TOKEN_CACHE_S seconds
(default 5), so a storm of deliveries does not look the same token up on every request. Saving or
deleting a token (the admin's deactivation) forgets every remembered token in that process at once;
any other process, or a change made without `save()` (SQL, `QuerySet.update`), takes effect there
within that many seconds. Only tokens that verified are remembered: a wrong token is looked up each time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils.crypto import salted_hmac

from rca.incidents.models import IntakeToken

TOKEN_PREFIX = "rlt_"  # noqa: S105  (a public marker that makes leaked tokens greppable)
SIGNATURE_SCHEME = "sha256="
_HMAC_KEY_SALT = "rootline.intake.hmac"
_REMEMBERED_MAX = 1000  # verified (source, token hash) pairs kept per process; there are a handful


class _Remembered:
    """The tokens this process verified lately: (source, hash) -> (monotonic expiry, row)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[tuple[str, str], tuple[float, IntakeToken]] = {}

    def get(self, key: tuple[str, str]) -> IntakeToken | None:
        """The row remembered under `key`, unless it expired."""
        entry = self._tokens.get(key)
        if entry is None or entry[0] <= time.monotonic():
            return None
        return entry[1]

    def put(self, key: tuple[str, str], record: IntakeToken, seconds: float) -> None:
        """Remember `record` for `seconds`."""
        with self._lock:
            if len(self._tokens) >= _REMEMBERED_MAX:
                self._tokens.clear()  # tokens are few: this only bounds memory
            self._tokens[key] = (time.monotonic() + seconds, record)

    def clear(self) -> None:
        """Forget every token."""
        with self._lock:
            self._tokens.clear()


_remembered = _Remembered()


@receiver(post_save, sender=IntakeToken)
@receiver(post_delete, sender=IntakeToken)
def _forget_tokens(**_: Any) -> None:
    """A token changed (deactivated, deleted): this process asks the database again for every token."""
    _remembered.clear()


@dataclass(frozen=True)
class IssuedToken:
    """What the creator of a token sees once: the stored row, the token and (if any) the HMAC secret."""

    record: IntakeToken
    token: str
    hmac_secret: str | None


def hash_token(token: str) -> str:
    """SHA-256 hex of a bearer token, as stored in `IntakeToken.token_hash`."""
    return hashlib.sha256(token.encode()).hexdigest()


def hmac_secret(record: IntakeToken) -> str | None:
    """The HMAC secret of a token that may sign bodies (None for a bearer-only token)."""
    if not record.hmac_salt:
        return None
    return salted_hmac(_HMAC_KEY_SALT, record.hmac_salt, algorithm="sha256").hexdigest()


def sign(secret: str, body: bytes) -> str:
    """The `X-Rootline-Signature` header value a sender computes for `body`."""
    return SIGNATURE_SCHEME + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@transaction.atomic
def issue_token(name: str, source: str, *, with_hmac: bool = False) -> IssuedToken:
    """Create an active token for `source` (alertmanager or generic); the clear token is returned once."""
    if source not in IntakeToken.SOURCES:
        raise ValueError(f"unknown intake source {source!r} (use {', '.join(IntakeToken.SOURCES)})")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    record = IntakeToken.objects.create(
        name=name,
        source=source,
        token_hash=hash_token(token),
        prefix=token[:12],
        hmac_salt=secrets.token_hex(16) if with_hmac else "",
    )
    return IssuedToken(record=record, token=token, hmac_secret=hmac_secret(record))


def verify_bearer(source: str, token: str) -> IntakeToken | None:
    """The active token of `source` whose value is `token`, else None (remembered for a few seconds:
    see the module docstring)."""
    digest = hash_token(token)
    key = (source, digest)
    record = _remembered.get(key)
    looked_up = record is None
    if looked_up:
        record = IntakeToken.objects.filter(token_hash=digest, source=source, active=True).first()
    # The lookup already matched on the hash; compare again in constant time so that no code path
    # ever decides on a variable-time string comparison of credentials.
    if record is None or not hmac.compare_digest(record.token_hash, digest):
        return None
    seconds = settings.ROOTLINE_RELIABILITY.intake_token_cache_s
    if looked_up and seconds:  # counted from the lookup: a token in constant use is still re-read
        _remembered.put(key, record, seconds)
    return record


def verify_signature(
    source: str, body: bytes, header: str, *, only: IntakeToken | None = None
) -> IntakeToken | None:
    """The active token of `source` whose HMAC secret signed `body` as `header` says, else None.

    A signature names no token, so each active signing token of the source is tried (there are a
    handful); `only` restricts the check to one token (when a bearer token was presented too).
    """
    if not header.startswith(SIGNATURE_SCHEME):
        return None
    candidates = (
        [only]
        if only is not None
        else IntakeToken.objects.filter(source=source, active=True).exclude(hmac_salt="")
    )
    match = None
    for record in candidates:
        secret = hmac_secret(record)
        # No early exit: every candidate is checked, so timing does not tell which one matched.
        if secret is not None and hmac.compare_digest(sign(secret, body), header) and match is None:
            match = record
    return match
