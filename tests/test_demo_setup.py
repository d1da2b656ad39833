"""What `make run` does before serving, on the embedded SQLite database it uses by default."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env["ANNOTATOR_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )


def test_demo_seeds_an_sqlite_database_without_any_service(tmp_path):
    manage("migrate", "--noinput", data_dir=tmp_path)

    first = manage("seed_demo", data_dir=tmp_path)
    again = manage("seed_demo", "--password", "chosen-password-1", data_dir=tmp_path)

    assert "colossalai_issues.json: created 36, updated 0, unchanged 0, skipped 0" in first.stdout
    assert "Demo owner account: demo / " in first.stdout
    assert "colossalai_issues.json: created 0, updated 0, unchanged 36, skipped 0" in again.stdout
    assert "Demo owner account: demo / chosen-password-1" in again.stdout
    with sqlite3.connect(tmp_path / "annotator.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM issues_issue").fetchone() == (36,)
        assert db.execute("SELECT max(comments_count) FROM issues_issue").fetchone()[0] > 0
    # the annotate page and its submit (hand-written SQL among their queries) work on SQLite too
    out = manage("shell", "--no-imports", "-c", LABEL_ON_THE_PAGE, data_dir=tmp_path).stdout
    assert out.split() == ["200", "True", "You:0/36", "200", "True", "200", "You:1/36"], out


LABEL_ON_THE_PAGE = """
import re
from django.contrib.auth.models import User
from django.test import Client
from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Study
study = Study.objects.get()
schema = codebook_schema(study.codebook_version)
client = Client(HTTP_HOST="127.0.0.1")
client.force_login(User.objects.get(username="annotator1"))
def mine(page):
    return "You:" + re.search(rb"data-my-progress>([^<]+)<", page.content).group(1).decode().replace(" ", "")
page = client.get(f"/studies/{study.pk}/annotate/", follow=True)
print(page.status_code, b'id="annotate-form"' in page.content, mine(page))
# what the seed codebook's rules ask of a relevant issue
codes = {"screening": "relevant", "distributed": "yes", "stage": "training-evaluation",
         "symptom": "hang-timeout"}
labels = {f"facet-{f.id}": [c.id for c in f.categories if c.code == codes[f.key]]
          for f in schema.facets if f.key in codes}
done = client.post(page.request["PATH_INFO"] + "submit/", labels, HTTP_HX_REQUEST="true")
print(done.status_code, bool(done.get("HX-Redirect")))
page = client.get(done["HX-Redirect"])
print(page.status_code, mine(page))
"""


LABEL_THE_DEMO = """
import random
from django.contrib.auth.models import User
from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Study
from annotator.studies.services import next_assignment, submit_annotation
study = Study.objects.get()
schema = codebook_schema(study.codebook_version)
for name in ["annotator1", "annotator2"]:
    user = User.objects.get(username=name)
    while (assignment := next_assignment(study=study, annotator=user)) is not None:
        # both annotators label even items alike, odd items each their own way
        item = assignment.item_id
        rng = random.Random(item if item % 2 == 0 else f"{name}-{item}")
        labels = {}
        for facet in schema.facets:
            groups = {c.parent_id for c in facet.categories}  # the rules want leaves
            options = [c.id for c in facet.categories if c.id not in groups][:3]
            labels[facet.id] = [rng.choice(options)]
        screening = next(f for f in schema.facets if f.key == "screening")
        if labels[screening.id] != [screening.categories[0].id]:  # not relevant: nothing else
            labels = {screening.id: labels[screening.id]}
        submit_annotation(assignment=assignment, user=user, labels=labels)
"""


def test_demo_round_labeled_on_sqlite_gets_its_agreement_run_and_decisions(tmp_path):
    manage("migrate", "--noinput", data_dir=tmp_path)
    manage("seed_demo", data_dir=tmp_path)

    manage("shell", "-c", LABEL_THE_DEMO, data_dir=tmp_path)

    with sqlite3.connect(tmp_path / "annotator.sqlite3") as db:
        runs = db.execute("SELECT status, error FROM agreement_agreementrun").fetchall()
        decided = db.execute("SELECT count(*) FROM adjudication_decision").fetchone()[0]
    # completing the round started a run in-process (no worker without REDIS_URL)
    assert runs and all(status == "succeeded" for status, _ in runs), runs
    assert 18 <= decided < 36  # the even items are unanimous; the odd ones mostly queued
    result = json.loads(manage("compute_agreement", "1", "--json", data_dir=tmp_path).stdout)
    assert {facet["key"] for facet in result["facets"]} >= {"screening", "symptom", "fix-pattern"}
    # the report page shows the run (its query has no PostgreSQL-only DISTINCT ON)
    page = manage("shell", "--no-imports", "-c", REPORT_PAGE, data_dir=tmp_path).stdout.split()
    assert page == ["200", "True"], page


REPORT_PAGE = """
from django.contrib.auth.models import User
from django.test import Client
client = Client(HTTP_HOST="127.0.0.1")
client.force_login(User.objects.get(username="demo"))
response = client.get("/agreement/studies/1/")
print(response.status_code, b'data-status="succeeded"' in response.content)
"""
