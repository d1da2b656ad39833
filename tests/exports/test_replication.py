"""The replication package: one zip, every file checked against the database; pseudonymised,
no user name, login or @mention is left anywhere in it, the codes stay the same from one
export to the next, and the mapping is only on the server."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from django.contrib.auth import get_user_model
from django.urls import reverse
from lxml import etree

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.agreement.models import AgreementRun
from annotator.agreement.services import run_agreement_run, start_agreement_run
from annotator.exports.dataset import methods_facts
from annotator.exports.methods import methods_latex, methods_markdown
from annotator.exports.models import ExportJob, Pseudonym
from annotator.exports.services import export_dataset, run_export_job, start_export_job
from annotator.issues.models import Issue
from annotator.studies.models import Annotation, AnnotationLabel, Item, Selection
from taxonomy_app.refi_qda.markup import schema
from taxonomy_app.services import export_version
from tests.exports.factories import exported_world
from tests.exports.test_huggingface import load
from tests.factories import IssueCommentFactory

pytestmark = pytest.mark.django_db
AUTHORS = ["octo-author", "Nccl-Dev"]
COMMENTER = "comment-person"
MENTIONED = "only-mentioned"


def world_with_people() -> Any:
    """The export test world, with issue authors, comments that @mention people, an annotator's
    note and an adjudicator's comment naming annotators, and a succeeded agreement run."""
    world = exported_world()
    issues = list(Issue.objects.filter(study_items__study=world.study).order_by("pk"))
    for n, issue in enumerate(issues):
        issue.author = AUTHORS[n % 2]
        issue.body = f"Seen by @{AUTHORS[(n + 1) % 2]} on 8 GPUs; @torch.no_grad() in the loop."
        issue.save()
        IssueCommentFactory(
            issue=issue,
            author=COMMENTER,
            body=f"@{MENTIONED} and {AUTHORS[0]}: see github.com/{AUTHORS[1]}/notes",
            key=f"c{n}",
            content_hash=f"{n:064x}",
        )
    Annotation.objects.filter(assignment__annotator=world.annotators[0]).update(
        notes="asked annotator-1 about it"
    )
    Decision.objects.filter(item__study=world.study).update(comment="study-owner agreed")
    run = start_agreement_run(study=world.study, enqueue=False)
    run_agreement_run(run_id=run.pk)
    return world


def names(world: Any) -> list[str]:
    users = get_user_model().objects.values_list("username", flat=True)
    return [*users, *AUTHORS, COMMENTER, MENTIONED]


def package(world: Any, **options: Any) -> dict[str, Any]:
    out = io.BytesIO()
    export_dataset(study=world.study, format="replication", out=out, **options)
    return unpack(out.getvalue())


def unpack(data: bytes) -> dict[str, Any]:
    files: dict[str, Any] = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            assert name.startswith("study-")
            short = name.split("/", 1)[1]
            raw = archive.read(name)
            files[short] = pq.read_table(io.BytesIO(raw)) if short.endswith(".parquet") else raw
    return files


def as_text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return json.dumps(value.to_pylist(), default=str)  # a Parquet table


def read_csv(raw: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(raw.decode("utf-8"))))


def codes(world: Any) -> dict[str, str]:
    """name → code for the study, from the server's mapping."""
    out = {}
    users = dict(get_user_model().objects.values_list("pk", "username"))
    for p in Pseudonym.objects.filter(study=world.study):
        out[users[int(p.key)] if p.kind == "annotator" else p.key] = p.code
    return out


def test_a_pseudonymised_package_names_nobody_and_matches_the_database(tmp_path: Path) -> None:
    world = world_with_people()
    files = package(world, pseudonymise=True)
    # No name anywhere: every file, Parquet read back, case-insensitively.
    for name, content in files.items():
        text = as_text(content).lower()
        for person in names(world):
            assert person.lower() not in text, (person, name)
    mapping = codes(world)
    assert {mapping[u.username] for u in world.annotators} <= {"A01", "A02", "A03"}
    assert {mapping[a.lower()] for a in AUTHORS} | {mapping[COMMENTER], mapping[MENTIONED]} == {
        "U0001",
        "U0002",
        "U0003",
        "U0004",
    }
    for code in mapping.values():  # the mapping itself is in no file
        assert not any(
            name in as_text(c) and code in as_text(c)
            for c in files.values()
            for name in mapping
            if mapping[name] == code
        )
    check_final(world, files, mapping)
    check_long(world, files, mapping)
    check_issues(world, files, mapping)
    check_codebooks(world, files)
    check_agreement(world, files, mapping)
    check_records(world, files)
    folder = tmp_path / "hf"
    for name, content in files.items():
        if name.startswith("huggingface/"):
            path = folder / name.removeprefix("huggingface/")
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                pq.write_table(content, path)
    loaded = load(folder, tmp_path)
    assert len(loaded["rows"]) == Item.objects.filter(study=world.study).count()


def check_final(world: Any, files: dict[str, Any], mapping: dict[str, str]) -> None:
    rows = {int(r["item_id"]): r for r in read_csv(files["data/final.csv"])}
    assert set(rows) == set(Item.objects.filter(study=world.study).values_list("pk", flat=True))
    parquet = {r["item_id"]: r for r in files["huggingface/data/final.parquet"].to_pylist()}
    assert set(parquet) == set(rows)
    for decision in Decision.objects.filter(item__study=world.study):
        row = rows[decision.item_id]
        assert row["decision_source"] == decision.source
        assert row["comment"] == f"{mapping['study-owner']} agreed"
        labels = DecisionLabel.objects.filter(decision=decision)
        for facet, code in labels.values_list("facet__key", "category__code"):
            cell = " ".join(v for k, v in row.items() if k.split("_l")[0] == facet and v)
            assert code in cell.replace(";", " ").split(), (decision.item_id, facet)
    undecided = set(rows) - set(Decision.objects.values_list("item_id", flat=True))
    assert undecided and all(rows[i]["decision_source"] == "" for i in undecided)


def check_long(world: Any, files: dict[str, Any], mapping: dict[str, str]) -> None:
    rows = [r for r in read_csv(files["data/long.csv"]) if r["row_kind"] == "annotation"]
    given = AnnotationLabel.objects.filter(
        annotation__assignment__item__study=world.study,
        annotation__status=Annotation.Status.SUBMITTED,
    ).values_list(
        "annotation__assignment__item_id",
        "annotation__assignment__annotator__username",
        "facet__key",
        "category__code",
    )
    expected = sorted((item, mapping[user], facet, code) for item, user, facet, code in given)
    found = sorted((int(r["item_id"]), r["annotator"], r["facet"], r["category"]) for r in rows)
    assert found == expected
    notes = {r["notes"] for r in rows if r["annotator"] == mapping[world.annotators[0].username]}
    assert notes == {f"asked {mapping['annotator-1']} about it"}


def check_issues(world: Any, files: dict[str, Any], mapping: dict[str, str]) -> None:
    lines = [json.loads(line) for line in files["data/issues.jsonl"].decode().splitlines()]
    items = dict(Item.objects.filter(study=world.study).values_list("pk", "issue_id"))
    assert {line["item_id"] for line in lines} == set(items)
    for line in lines:
        issue = Issue.objects.get(pk=items[line["item_id"]])
        assert line["author"] == mapping[issue.author.lower()]
        assert (line["number"], line["title"]) == (issue.number, issue.title)
        other = AUTHORS[1] if issue.author == AUTHORS[0] else AUTHORS[0]
        assert line["body"] == (
            f"Seen by @{mapping[other.lower()]} on 8 GPUs; @torch.no_grad() in the loop."
        )
        (comment,) = line["comments"]
        assert comment["author"] == mapping[COMMENTER]
        assert comment["body"] == (
            f"@{mapping[MENTIONED]} and {mapping['octo-author']}: see "
            f"github.com/{mapping['nccl-dev']}/notes"
        )


def check_codebooks(world: Any, files: dict[str, Any]) -> None:
    stem = f"codebook/{world.version.codebook.slug}-v{world.version.number}"
    for fmt in ("json", "yaml", "qdc"):
        assert files[f"{stem}.{fmt}"].decode() == export_version(version=world.version, fmt=fmt)
    qdc = etree.fromstring(files[f"{stem}.qdc"])
    assert schema().validate(qdc.getroottree()), schema().error_log
    html = files[f"{stem}-guideline.html"].decode()
    for code in world.version.facets.values_list("categories__code", flat=True):
        assert f"({code})" in html


def check_agreement(world: Any, files: dict[str, Any], mapping: dict[str, str]) -> None:
    (run,) = AgreementRun.objects.filter(study=world.study)
    record = json.loads(files[f"agreement/run-{run.pk}.json"])
    stored = json.dumps(run.result)  # the run as stored, its raters' names as their codes
    for name in sorted(mapping, key=len, reverse=True):
        stored = stored.replace(f'"{name}"', f'"{mapping[name]}"')
    assert record["result"] == json.loads(stored)
    assert "annotator-0" in json.dumps(run.result)  # so the run did name them
    assert record["inputs"]["label_table_sha256"] == run.inputs["label_table_sha256"]
    assert record["ratings_tables"]["same_labels_as_the_run"] is True
    for facet in record["ratings_tables"]["files"]:
        key = facet.removeprefix(f"run-{run.pk}-").removesuffix(".csv")
        table = read_csv(files[f"agreement/{facet}"])
        given: dict[tuple[int, str], set[str]] = {}
        for item, user, code in AnnotationLabel.objects.filter(
            annotation__assignment__item__study=world.study,
            annotation__status=Annotation.Status.SUBMITTED,
            facet__key=key,
        ).values_list(
            "annotation__assignment__item_id",
            "annotation__assignment__annotator__username",
            "category__code",
        ):
            given.setdefault((item, mapping[user]), set()).add(code)
        found = {
            (int(row["item_id"]), rater): set(cell.split(";"))
            for row in table
            for rater, cell in row.items()
            if rater != "item_id" and cell
        }
        assert found == given, key


def check_records(world: Any, files: dict[str, Any]) -> None:
    facts = methods_facts(world.study)
    assert files["methods.md"].decode() == methods_markdown(facts)
    assert files["methods.tex"].decode() == methods_latex(facts)
    rounds = json.loads(files["rounds.json"])
    assert [(r["number"], r["kind"]) for r in rounds] == list(
        world.study.rounds.order_by("number").values_list("number", "kind")
    )
    long_csv = read_csv(files["data/long.csv"])
    long_parquet = files["huggingface/data/long.parquet"].to_pylist()
    assert [(int(r["item_id"]), r["annotator"], r["category"] or None) for r in long_csv] == [
        (r["item_id"], r["annotator"] or "", r["category"]) for r in long_parquet
    ]
    (selection,) = json.loads(files["selections.json"])
    stored = Selection.objects.get(study=world.study)
    assert (selection["method"], selection["seed"]) == (stored.method_text, stored.seed)
    citation = yaml.safe_load(files["CITATION.cff"])
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "dataset"
    assert citation["license"] == "CC-BY-4.0"
    readme = files["README.txt"].decode()
    for name in files:
        assert f"  {name}\n" in readme, name
    card = files["huggingface/README.md"].decode()
    assert yaml.safe_load(card.split("---\n")[1])["license"] == "cc-by-4.0"


def test_codes_stay_the_same_across_exports_and_new_people_get_new_ones() -> None:
    world = world_with_people()
    package(world, pseudonymise=True)
    first = codes(world)
    issue = Issue.objects.filter(study_items__study=world.study).first()
    issue.author = "late-author"
    issue.save()
    second_files = package(world, pseudonymise=True)
    second = codes(world)
    assert {k: v for k, v in second.items() if k in first} == first
    logins = sum(1 for code in first.values() if code.startswith("U"))
    assert second["late-author"] == f"U{logins + 1:04d}"
    assert "late-author" not in as_text(second_files["data/issues.jsonl"])


def test_without_pseudonymising_the_names_are_there() -> None:
    world = world_with_people()
    files = package(world)
    issues = as_text(files["data/issues.jsonl"])
    assert AUTHORS[0] in issues and f"@{MENTIONED}" in issues
    assert "annotator-0" in as_text(files["data/long.csv"])
    assert not Pseudonym.objects.exists()


def test_the_job_writes_the_package_with_progress(settings, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    world = world_with_people()
    job = start_export_job(
        study=world.study, format="replication", pseudonymise=True, license="cc0-1.0"
    )
    run_export_job(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.SUCCEEDED, job.error
    assert job.filename.endswith(f"-replication-pseudonymised-export-{job.pk}.zip")
    assert job.rows_written == job.total_rows > 0 and job.percent == 100
    assert job.card.startswith("---\n") and "license: cc0-1.0" in job.card
    with job.file.open("rb") as stored:
        files = unpack(stored.read())
    assert "CITATION.cff" in files and "annotator-0" not in as_text(files["data/long.csv"])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"format": "csv", "pseudonymise": True}, "pseudonymise: only the Hugging Face folder"),
        ({"format": "replication", "license": "gpl"}, "unknown license 'gpl'"),
    ],
)
def test_bad_options_are_refused_naming_the_field(options: dict[str, Any], message: str) -> None:
    world = exported_world()
    with pytest.raises(ValueError, match=message):
        start_export_job(study=world.study, **options)
    assert not ExportJob.objects.exists() and not Pseudonym.objects.exists()


def test_the_guideline_in_the_package_lists_what_the_guideline_page_lists(client) -> None:  # type: ignore[no-untyped-def]
    world = exported_world()
    files = package(world)
    stem = f"codebook/{world.version.codebook.slug}-v{world.version.number}"
    packaged = files[f"{stem}-guideline.html"].decode()
    client.force_login(world.owner)
    page = client.get(reverse("taxonomy:guideline", args=[world.version.pk])).content.decode()
    anchors = re.compile(r'<section class="entry depth-(\d)" id="([^"]+)"')
    assert anchors.findall(packaged) == anchors.findall(page) != []
    assert "<html" in packaged and "/static/" not in packaged  # standalone: no site assets
