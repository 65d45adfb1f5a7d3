"""The pages app's configuration."""

from django.apps import AppConfig


class FrontendConfig(AppConfig):
    """The pages engineers use."""

    name = "frontend"
    verbose_name = "Rootline pages"
