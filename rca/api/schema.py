"""OpenAPI security schemes for intake authentication (loaded by ApiConfig.ready)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from typing_extensions import override

from rca.incidents.models import ActionProposal, Alert, Incident, Investigation


class IntakeTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """Either credential authenticates a webhook delivery."""

    target_class = "rca.api.authentication.IntakeTokenAuthentication"
    name = ["intakeBearer", "intakeSignature"]

    def get_security_requirement(self, auto_schema: Any) -> list[dict[str, list[str]]]:
        """Either credential suffices (a list of requirements is OR in OpenAPI); both schemes are
        defined by `get_security_definition`, registered with the same names."""
        return [{name: []} for name in self.name]

    @override
    def get_security_definition(self, auto_schema: Any) -> list[dict[str, Any]]:
        return [
            {
                "type": "http",
                "scheme": "bearer",
                "description": "A per-source intake token (`manage.py create_intake_token`).",
            },
            {
                "type": "apiKey",
                "in": "header",
                "name": "X-Rootline-Signature",
                "description": "`sha256=<hex>`: HMAC-SHA256 of the raw body under the token's HMAC secret.",
            },
        ]


# Named choice sets for ENUM_NAME_OVERRIDES (settings cannot import models; this module is loaded
# when the schema is generated): without names, every `status` field would get a hashed enum name.
IncidentStatus = Incident.Status
AlertStatus = Alert.Status
InvestigationStatus = Investigation.Status
ActionStatus = ActionProposal.Status
HEALTH_STATUSES = ("ok", "down")
# The safety core's tiers as the models label them; every tier field of the API uses these.
TIER_CHOICES = [
    (str(value), str(label)) for value, label in ActionProposal._meta.get_field("tier").flatchoices
]
