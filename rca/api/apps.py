"""The REST API app's configuration."""

from django.apps import AppConfig
from typing_extensions import override


class ApiConfig(AppConfig):
    """The REST API (an app so that its templates, static files and schema extensions load)."""

    name = "rca.api"
    label = "api"
    verbose_name = "API"

    @override
    def ready(self) -> None:
        from rca.api import schema  # noqa: F401  (registers the OpenAPI security schemes)
