"""The annotate page's facet pickers check exactly the page's choices: a saved draft's, or those
of a form that comes back with errors; the pieces kept per codebook version carry no page's
choices into another's."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.urls import reverse

from annotator.studies.codebook import codebook_schema
from annotator.studies.services import next_assignment, save_draft

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


class Choices(HTMLParser):
    """The category inputs of a page (`facet-<id>` radios and checkboxes): value → checked."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.inputs: dict[int, bool] = {}
        self.invalid: list[str] = []  # ids of the fieldsets marked invalid
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "input" and (found.get("name") or "").startswith("facet-"):
            assert found["type"] in {"radio", "checkbox"}
            self.inputs[int(found["value"] or "")] = "checked" in found
        if tag == "fieldset" and found.get("aria-invalid") == "true":
            self.invalid.append(found["id"] or "")

    @property
    def checked(self) -> set[int]:
        return {value for value, checked in self.inputs.items() if checked}


def category_ids(world) -> set[int]:
    return {c.id for f in codebook_schema(world.version).facets for c in f.categories}


def page_choices(client, assignment) -> Choices:
    response = client.get(assignment.get_absolute_url())
    assert response.status_code == 200
    return Choices(response.content.decode())


def ids(world, **codes) -> set[int]:
    return {c for chosen in world.labels(**codes).values() for c in chosen}


def test_a_saved_draft_checks_exactly_its_categories(client, world):
    annotator = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=annotator)
    client.force_login(annotator)
    assert page_choices(client, assignment).checked == set()  # nothing chosen yet
    chosen = dict(screening="relevant", symptom="hang", fix=["version", "config"])
    save_draft(assignment=assignment, user=annotator, labels=world.labels(**chosen))

    choices = page_choices(client, assignment)

    assert set(choices.inputs) == category_ids(world)  # every category has its input
    assert choices.checked == ids(world, **chosen)


def test_each_page_checks_its_own_choices_only(client, world):
    """Pages of one codebook version share the pieces kept for it: one page's choices must not
    show on another's."""
    pages = {}
    choices = [dict(symptom="oom", fix="config"), dict(screening="not-a-bug")]
    for annotator, chosen in zip(world.annotators, choices, strict=True):
        assignment = next_assignment(study=world.study, annotator=annotator)
        save_draft(assignment=assignment, user=annotator, labels=world.labels(**chosen))
        pages[annotator.pk] = (assignment, ids(world, **chosen))

    for annotator in world.annotators * 2:
        client.force_login(annotator)
        assignment, chosen = pages[annotator.pk]
        assert page_choices(client, assignment).checked == chosen


@pytest.mark.parametrize("htmx", [True, False], ids=["partial", "full page"])
def test_a_form_with_errors_keeps_exactly_its_choices(client, world, htmx):
    annotator = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=annotator)
    client.force_login(annotator)
    save_draft(assignment=assignment, user=annotator, labels=world.labels(symptom="crash"))
    posted = {f"facet-{f}": c for f, c in world.labels(symptom="oom", fix="version").items()}

    response = client.post(
        reverse("studies:submit", args=[assignment.pk]), posted, **(HTMX if htmx else {})
    )

    assert response.status_code == (200 if htmx else 400)
    choices = Choices(response.content.decode())
    assert set(choices.inputs) == category_ids(world)
    assert choices.checked == ids(world, symptom="oom", fix="version")  # the posted ones
    assert choices.invalid == ["facet-screening"]  # required, not chosen


def test_the_pickers_template_comment_stays_out_of_the_page(client, world):
    annotator = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=annotator)
    client.force_login(annotator)
    html = client.get(assignment.get_absolute_url()).content.decode()
    assert "{#" not in html and "#}" not in html and "{%" not in html
