"""Import and export of codebook versions: round trips, the seed, and bad files writing nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from taxonomy_app.formats import CodebookFormatError
from taxonomy_app.models import Category, ChangeOperation, Codebook, CodebookVersion, Facet
from taxonomy_app.services import (
    diff_version,
    export_version,
    import_codebook,
    start_draft,
    update_category,
)
from tests.taxonomy_app.factories import category, small_document
from tests.taxonomy_app.test_formats import BAD_DOCUMENTS

pytestmark = pytest.mark.django_db


def snapshot() -> dict[str, int]:
    models = [Codebook, CodebookVersion, Facet, Category, ChangeOperation]
    return {model.__name__: model.objects.count() for model in models}


def without_version(text: str, fmt: str) -> dict:
    from taxonomy_app.formats import load_document

    document = load_document(text, fmt)
    document.pop("version")
    return document


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_export_then_import_gives_an_identical_version(v1, fmt):
    draft = start_draft(codebook=v1.codebook)
    update_category(category=category(draft, "symptom", "hang"), definition="Line one.\nLine two.")
    exported = export_version(version=draft, fmt=fmt)
    Codebook.objects.filter(pk=v1.codebook_id).update(slug="original")

    copy = import_codebook(data=exported, fmt=fmt)

    assert copy.codebook.slug == "small-bugs"
    again = export_version(version=copy, fmt=fmt)
    assert without_version(again, fmt) == without_version(exported, fmt)


def test_import_keeps_hierarchy_order_and_flags(v1):
    hang = category(v1, "symptom", "hang")
    symptom = Facet.objects.get(version=v1, key="symptom")
    roots = Category.objects.filter(facet=symptom, parent=None).order_by("order")

    assert hang.parent.code == "failure"
    assert [c.code for c in roots] == ["failure", "slow", "other"]
    assert (symptom.kind, symptom.required, v1.status, v1.changelog) == (
        "single",
        False,
        "published",
        "First.",
    )


@pytest.mark.parametrize(
    ("case", "document", "message"), BAD_DOCUMENTS, ids=[c[0] for c in BAD_DOCUMENTS]
)
def test_bad_file_changes_nothing(v1, case, document, message):
    before = snapshot()

    with pytest.raises(CodebookFormatError, match=message):
        import_codebook(data=json.dumps(document), fmt="json")

    assert snapshot() == before


@pytest.mark.parametrize(
    ("case", "document", "message"),
    [BAD_DOCUMENTS[i] for i in (3, 8, 9, 10)],
    ids=["unknown facet kind", "unknown parent", "duplicate code", "cycle"],
)
def test_command_exits_non_zero_naming_the_element_and_writes_nothing(
    tmp_path, v1, case, document, message
):
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(document))  # JSON is YAML too
    before = snapshot()

    with pytest.raises(CommandError, match=f"bad.yaml: .*{message}.*nothing was imported"):
        call_command("load_codebook", str(path), "--new-version", stdout=io.StringIO())

    assert snapshot() == before


def test_slug_clash_is_refused_and_writes_nothing(v1):
    before = snapshot()

    with pytest.raises(Exception, match="slug 'small-bugs' exists already"):
        import_codebook(data=json.dumps(small_document()), fmt="json")

    assert snapshot() == before


def test_seed_codebook_loads_published_and_reloading_changes_nothing(db):
    out = io.StringIO()
    call_command("load_codebook", "--publish", stdout=out)
    call_command("load_codebook", "--publish", stdout=out)

    version = CodebookVersion.objects.get(codebook__slug="distributed-dl-bugs")
    assert version.is_published
    assert "unchanged" in out.getvalue()
    keys = list(version.facets.values_list("key", flat=True))
    assert keys == ["screening", "distributed", "stage", "symptom", "root-cause", "fix-pattern"]


def test_seed_codebook_defines_every_category_fully(db):
    call_command("load_codebook", "--publish", stdout=io.StringIO())
    version = CodebookVersion.objects.get(codebook__slug="distributed-dl-bugs")
    categories = Category.objects.filter(facet__version=version)

    assert categories.count() >= 60
    for item in categories:
        assert item.definition and item.include and item.exclude and item.examples, item.code
    symptom = version.facets.get(key="symptom")
    inner = {c.parent.code for c in Category.objects.filter(facet=symptom, parent__isnull=False)}
    assert inner == {"program-failure", "unexpected-performance"}
    assert version.facets.get(key="fix-pattern").kind == "multi"
    screening = set(version.facets.get(key="screening").categories.values_list("name", flat=True))
    assert screening == {"Relevant", "Not a bug", "Question / how-to", "Duplicate", "Unclear"}


def test_seed_demo_is_left_alone_when_the_owner_has_evolved_it(db):
    call_command("load_codebook", "--publish", stdout=io.StringIO())
    codebook = Codebook.objects.get(slug="distributed-dl-bugs")
    start_draft(codebook=codebook)

    out = io.StringIO()
    call_command("load_codebook", "--publish", "--if-missing", stdout=out)

    assert "exists already" in out.getvalue()
    assert codebook.versions.count() == 2


def test_differing_file_needs_new_version_flag(tmp_path, v1):
    path = tmp_path / "small.json"
    document = small_document()
    document["facets"][1]["categories"][1]["definition"] = "Waits forever."
    path.write_text(json.dumps(document))

    with pytest.raises(CommandError, match="--new-version"):
        call_command("load_codebook", str(path), stdout=io.StringIO())
    call_command("load_codebook", str(path), "--new-version", stdout=io.StringIO())

    draft = v1.codebook.draft()
    diff = diff_version(version=draft)
    assert [(c.category.code, [f.field for f in c.fields]) for c in diff.changed] == [
        ("hang", ["definition"])
    ]


def test_import_as_next_version_reports_categories_left_out(v1):
    document = small_document()
    document["facets"][1]["categories"] = document["facets"][1]["categories"][:-1]

    draft = import_codebook(data=json.dumps(document), fmt="json", codebook=v1.codebook)

    diff = diff_version(version=draft)
    assert [c.category.code for c in diff.removed] == ["other"]
    assert draft.based_on == v1


def test_demo_has_the_seed_codebook_published_and_reseeding_keeps_it(db):
    for _ in range(2):
        call_command("seed_demo", "--password", "demo-password-1", stdout=io.StringIO())

    codebook = Codebook.objects.get(slug="distributed-dl-bugs")
    assert [(v.number, v.status) for v in codebook.versions.all()] == [(1, "published")]
