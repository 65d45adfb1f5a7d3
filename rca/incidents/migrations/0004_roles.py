"""The three roles as Django groups: viewer (read), responder (re-run, reject), approver (approve).

The names are frozen here (a migration must not follow later code); `rca.incidents.approvals.Role`
uses the same names.
"""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

ROLES = ("viewer", "responder", "approver")


def create_groups(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    group = apps.get_model("auth", "Group")
    for name in ROLES:
        group.objects.get_or_create(name=name)


def delete_groups(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("incidents", "0003_intake_token"),
    ]

    operations = [migrations.RunPython(create_groups, delete_groups)]
