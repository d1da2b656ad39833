from django.db import migrations

# A GIN index for full-text search exists only on PostgreSQL; the SQLite database of the local
# demo searches with substring matches instead (IssueQuerySet.search).
CREATE = "CREATE INDEX IF NOT EXISTS issue_search_gin ON issues_issue USING gin (search_vector)"
DROP = "DROP INDEX IF EXISTS issue_search_gin"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("issues", "0001_initial")]

    operations = [migrations.RunPython(create, drop)]
