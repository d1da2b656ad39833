from django.db import migrations, models
from django.db.models import Q

# Measured on a million issues (benchmarks/page_scale.py): the list's newest-first page sorted
# the whole table (1.2 s) with only an ascending index on created_at; a rare label scanned it
# (0.9 s) without an index on labels; the count of issues awaiting search indexing scanned it
# on every search (0.7 s). The GIN index on labels serves JSON containment (`labels @> '["x"]'`)
# and the local SQLite demo matches labels by substring; SQLite has no NULLS LAST in an index.
# Both exist on PostgreSQL only.
CREATE = [
    "CREATE INDEX IF NOT EXISTS issue_labels_gin ON issues_issue USING gin (labels jsonb_path_ops)",
    "CREATE INDEX IF NOT EXISTS issue_newest ON issues_issue (created_at DESC NULLS LAST, id DESC)",
]
DROP = ["DROP INDEX IF EXISTS issue_labels_gin", "DROP INDEX IF EXISTS issue_newest"]


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in CREATE:
            schema_editor.execute(statement)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("issues", "0007_issue_revision")]

    operations = [
        migrations.RemoveIndex(model_name="issue", name="issue_created_at"),
        migrations.AddIndex(
            model_name="issue",
            index=models.Index(
                fields=["id"], condition=Q(search_vector__isnull=True), name="issue_unindexed"
            ),
        ),
        migrations.RunPython(create, drop),
    ]
