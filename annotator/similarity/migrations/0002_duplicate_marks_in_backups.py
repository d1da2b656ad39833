"""No schema change: from this migration on, a study backup holds the study's duplicate marks
(`similarity.duplicatemark`). An archive whose migrations stop before it was made before marks
were archived, and restores without them; a later archive must hold the table
(annotator/backup/tables.py, `added_in`)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("similarity", "0001_near_duplicates_and_similar_issues"),
    ]

    operations: list[migrations.operations.base.Operation] = []
