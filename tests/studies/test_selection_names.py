"""A selection's filters written for people: a repository id reads as its owner/name on the
study page, in Selection.method_text, in the dataset card and in the methods facts."""

from __future__ import annotations

import io

import pytest
from django.urls import reverse

from annotator.exports.dataset import methods_facts
from annotator.exports.services import export_dataset
from annotator.issues.filter_text import filter_names, filters_in_words, readable_filters
from annotator.issues.models import Repository
from annotator.studies.models import Selection
from tests.exports.factories import exported_world


@pytest.fixture
def world(db):  # type: ignore[no-untyped-def]
    return exported_world()


def test_a_repository_id_reads_as_its_name(world) -> None:  # type: ignore[no-untyped-def]
    repository = Repository.objects.get(owner="hpcaitech")
    stored = {"repository": str(repository.pk), "state": "closed", "label": ""}
    assert readable_filters(stored) == {"repository": "hpcaitech/ColossalAI", "state": "closed"}
    assert filters_in_words(stored) == "repository = 'hpcaitech/ColossalAI'; state = 'closed'"
    # An export's filter is already a name; a deleted repository keeps its id, marked.
    assert readable_filters({"repository": "microsoft/DeepSpeed"}) == {
        "repository": "microsoft/DeepSpeed"
    }
    assert readable_filters({"repository": "999999"}) == {"repository": "#999999"}


def test_names_of_many_filter_sets_are_read_in_one_query(world, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    ids = [str(r.pk) for r in Repository.objects.all()]
    with django_assert_num_queries(1):
        names = filter_names([{"repository": pk} for pk in ids] + [{"state": "open"}])
    assert sorted(names["repository"].values()) == ["hpcaitech/ColossalAI", "microsoft/DeepSpeed"]


def test_method_text_names_the_repository(world) -> None:  # type: ignore[no-untyped-def]
    selection = Selection.objects.get(study=world.study)
    assert selection.method_text.startswith("Issues matching repository = 'hpcaitech/ColossalAI',")
    assert selection.filters_text == "repository = hpcaitech/ColossalAI"


def test_the_study_page_names_the_repository(client, world) -> None:  # type: ignore[no-untyped-def]
    client.force_login(world.owner)
    page = client.get(reverse("studies:detail", args=[world.study.pk])).content.decode()
    method = page[page.index('id="method"') :]
    assert "repository = &#x27;hpcaitech/ColossalAI&#x27;" in method
    assert "Filters: <code>repository = hpcaitech/ColossalAI</code>" in method
    repository = Repository.objects.get(owner="hpcaitech")
    assert f"repository = &#x27;{repository.pk}&#x27;" not in method
    assert f"'repository': '{repository.pk}'" not in method


def test_the_card_and_the_methods_facts_name_the_repository(world) -> None:  # type: ignore[no-untyped-def]
    card = export_dataset(study=world.study, format="csv", out=io.BytesIO()).card
    assert "- Selection query: `Issues matching repository = 'hpcaitech/ColossalAI'," in card
    filtered = export_dataset(
        study=world.study,
        format="csv",
        out=io.BytesIO(),
        filters={"repository": "hpcaitech/ColossalAI"},
    ).card
    assert filtered.startswith("# Study: dataset (repository = hpcaitech/ColossalAI)")
    facts = methods_facts(world.study)
    assert [s.filters for s in facts.selections] == [{"repository": "hpcaitech/ColossalAI"}]
