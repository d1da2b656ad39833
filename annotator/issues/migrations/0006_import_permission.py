"""The import_issues permission, and an "Importers" group holding it: grant it in the admin
(Users → groups) to let a non-staff account import and sync issues."""

from typing import Any

from django.db import migrations

GROUP = "Importers"


def create_group(apps: Any, schema_editor: Any) -> None:
    # Permissions are otherwise made after migrate (post_migrate); the group needs it now.
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    content_type, _ = ContentType.objects.get_or_create(app_label="issues", model="importjob")
    permission, _ = Permission.objects.get_or_create(
        content_type=content_type,
        codename="import_issues",
        defaults={"name": "Can import and sync GitHub issues"},
    )
    group, _ = Group.objects.get_or_create(name=GROUP)
    group.permissions.add(permission)


def remove_group(apps: Any, schema_editor: Any) -> None:
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("issues", "0005_job_heartbeat"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="importjob",
            options={
                "ordering": ["-created_at"],
                "permissions": [("import_issues", "Can import and sync GitHub issues")],
            },
        ),
        migrations.RunPython(create_group, remove_group),
    ]
