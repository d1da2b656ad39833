from django.db import migrations

# The text search configuration fenced code is indexed with (annotator/issues/sql.py): English
# words stemmed as in `english`, while the tokens of logs that nobody searches for (integers,
# decimals, versions, file paths and the numeric halves of names like node-12) are dropped, so
# each log adds a few dozen entries to the GIN index instead of hundreds of unique numbers.
# PostgreSQL only: the SQLite demo keeps no search index.
CREATE = [
    "CREATE TEXT SEARCH CONFIGURATION issue_code (COPY = pg_catalog.english)",
    "ALTER TEXT SEARCH CONFIGURATION issue_code DROP MAPPING FOR "
    "int, uint, float, sfloat, version, file, numhword, hword_numpart",
]
DROP = ["DROP TEXT SEARCH CONFIGURATION IF EXISTS issue_code"]


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in CREATE:
            schema_editor.execute(statement)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("issues", "0008_list_indexes")]

    operations = [migrations.RunPython(create, drop)]
