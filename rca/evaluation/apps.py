"""The evaluation app's configuration."""

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """Scoring the engine on recorded public cases (management command `evaluate`)."""

    name = "rca.evaluation"
    label = "evaluation"
    verbose_name = "Evaluation"
