"""The incidents app's configuration."""

from django.apps import AppConfig


class IncidentsConfig(AppConfig):
    """Incidents, alerts, investigations and their audit trail."""

    name = "rca.incidents"
    label = "incidents"
    verbose_name = "Incidents"
    default_auto_field = "django.db.models.BigAutoField"
