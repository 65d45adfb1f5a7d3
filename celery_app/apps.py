"""`celery_app` as a Django app: installing it loads the Celery application in every Django process."""

from django.apps import AppConfig


class CeleryAppConfig(AppConfig):
    """No models: importing the package is the point (see celery_app.app)."""

    name = "celery_app"
    label = "celery_app"
    verbose_name = "Celery tasks"
