from django.db import migrations, models
from django.db.models import F, Q

# Measured on a million issues (benchmarks/page_scale.py): the list's newest-first page sorted
# the whole table (1.2 s) with only an ascending index on created_at; a rare label scanned it
# (0.9 s) without an index on labels; the count of issues awaiting search indexing scanned it
# on every search (0.7 s). The GIN index on labels serves JSON containment (`labels @> '["x"]'`)
# and exists on PostgreSQL only; the local SQLite demo matches labels by substring.
CREATE = "CREATE INDEX IF NOT EXISTS issue_labels_gin ON issues_issue USING gin (labels jsonb_path_ops)"
DROP = "DROP INDEX IF EXISTS issue_labels_gin"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("issues", "0007_issue_revision")]

    operations = [
        migrations.RemoveIndex(model_name="issue", name="issue_created_at"),
        migrations.AddIndex(
            model_name="issue",
            index=models.Index(
                F("created_at").desc(nulls_last=True), F("id").desc(), name="issue_newest"
            ),
        ),
        migrations.AddIndex(
            model_name="issue",
            index=models.Index(
                fields=["id"], condition=Q(search_vector__isnull=True), name="issue_unindexed"
            ),
        ),
        migrations.RunPython(create, drop),
    ]
