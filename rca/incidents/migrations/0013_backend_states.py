from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("incidents", "0012_workflow"),
    ]

    operations = [
        migrations.AddField(
            model_name="investigation",
            name="backends",
            field=models.JSONField(
                blank=True, default=dict, help_text="Each live telemetry backend's state when the run ended."
            ),
        ),
    ]
