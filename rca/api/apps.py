from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API (an app so that its templates, static files and schema extensions load)."""

    name = "rca.api"
    label = "api"
    verbose_name = "API"

    def ready(self) -> None:
        from rca.api import schema  # noqa: F401  (registers the OpenAPI security schemes)
