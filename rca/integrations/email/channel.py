"""E-mail notifications through Django's e-mail backend (the mail server of the EMAIL_* settings)."""

from __future__ import annotations

from django.core.mail import send_mail

from rca.integrations.email.config import EmailConfig
from rca.integrations.journal import Journal


class EmailChannel:
    """Mails a notification to the configured recipients, from DEFAULT_FROM_EMAIL."""

    name = EmailConfig.name

    def __init__(self, config: EmailConfig) -> None:
        self.config = config

    def send(self, subject: str, text: str, journal: Journal) -> None:
        """Send `subject` and `text`, unless in dry run (recorded either way)."""
        recipients = list(self.config.recipients)
        journal.record(
            "SMTP", ", ".join(recipients), {"subject": subject, "body": text}, sent=not journal.dry_run
        )
        if not journal.dry_run:
            send_mail(subject, text, None, recipients, fail_silently=False)
