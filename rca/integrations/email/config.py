"""E-mail's configuration: who notifications go to (`ROOTLINE_NOTIFY_EMAIL`, comma-separated; unset: off)
and the mail server they are sent through (Django's `EMAIL_*` settings, same names)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Self

from rca import env

RECIPIENTS_ENV = "ROOTLINE_NOTIFY_EMAIL"
SMTP_ENV = ("EMAIL_HOST", "EMAIL_PORT", "EMAIL_HOST_USER", "EMAIL_HOST_PASSWORD", "EMAIL_USE_TLS")
SENDER_ENV = "DEFAULT_FROM_EMAIL"


@dataclass(frozen=True)
class SmtpConfig:
    """The mail server notifications are sent through (Django's EMAIL_* settings, same names)."""

    host: str = "localhost"
    port: int = 25
    user: str = ""
    password: str = field(default="", repr=False)  # never in a log line
    use_tls: bool = False
    sender: str = "rootline@localhost"

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> SmtpConfig:
        """EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS, DEFAULT_FROM_EMAIL."""
        sender = env.text(environ, SENDER_ENV) or cls.sender
        if sender.count("@") != 1:
            raise env.ConfigError(f"{SENDER_ENV}={sender!r} is not an e-mail address")
        host, port, user, password, use_tls = SMTP_ENV
        return cls(
            host=env.text(environ, host) or cls.host,
            port=env.port(environ, port, cls.port),
            user=env.text(environ, user) or "",
            password=env.text(environ, password) or "",
            use_tls=env.flag(environ, use_tls, False),
            sender=sender,
        )


@dataclass(frozen=True)
class EmailConfig:
    """The addresses notifications are e-mailed to."""

    recipients: tuple[str, ...]

    name: ClassVar[str] = "email"

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """ROOTLINE_NOTIFY_EMAIL and the mail server's variables."""
        return (RECIPIENTS_ENV, *SMTP_ENV, SENDER_ENV)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Self | None:
        """The recipients; None when there are none."""
        raw = env.text(environ, RECIPIENTS_ENV) or ""
        recipients = tuple(a.strip() for a in raw.split(",") if a.strip())
        for address in recipients:
            if address.count("@") != 1 or address.startswith("@") or address.endswith("@"):
                raise env.ConfigError(f"{RECIPIENTS_ENV} has {address!r}, which is not an e-mail address")
        return cls(recipients) if recipients else None
