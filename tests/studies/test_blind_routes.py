"""Blindness, proved over every route the URL resolver knows (so a new route cannot escape).

Annotators A and B share an item; B has submitted labels and notes. For every URL pattern, with
every plausible id in each parameter (A's and B's assignments, the item, B's annotation, …),
A's GET (page and htmx partial) must not depend on *what* B labeled: we record all of A's
responses, change B's labels and notes, record again, and the two must be identical. B's notes
marker must never appear, in GET or POST answers. The owner's item page, which may show B's
labels, changes between the two states: the control that the comparison can see a leak.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from annotator.studies.models import Annotation, AnnotationLabel, Assignment
from annotator.studies.services import (
    create_invitation,
    next_assignment,
    save_draft,
    submit_annotation,
)

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
SECRET = "SECRET-NOTES-OF-B"
TOKENS = re.compile(
    r'(csrfmiddlewaretoken" value="|"X-CSRFToken": "|\["X-CSRFTOKEN"\] = "|csrftoken=)[\w-]+',
    re.IGNORECASE,
)
GROUP = re.compile(r"\(\?P<(\w+)>([^)]*)\)")
CONVERTER = re.compile(r"<(?:(\w+):)?(\w+)>")


def walk(patterns, prefix: str = "") -> Iterator[tuple[str, object]]:
    for pattern in patterns:
        route = str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from walk(pattern.url_patterns, prefix + route)
        elif isinstance(pattern, URLPattern):
            yield prefix + route, pattern


def concrete_urls(route: str, values: dict[str, list[str]]) -> list[str]:
    """Every URL a route gives with the candidate values of its parameters (path converters
    and regex groups alike; a regex alternative takes its first branch)."""
    names: list[str] = []

    def slot(name: str) -> str:
        names.append(name)
        return f"{{{len(names) - 1}}}"

    template = CONVERTER.sub(lambda m: slot(m.group(2)), route)
    template = GROUP.sub(
        lambda m: (
            slot(m.group(1))
            if m.group(1) not in {"app_label", "format"}
            else m.group(2).split("|")[0].lstrip("\\.").replace("\\", "")
        ),
        template,
    )
    template = template.replace("^", "").replace("$", "").replace("\\", "")
    choices = [values.get(name, values["*"]) for name in names]
    return ["/" + template.format(*combo) for combo in itertools.product(*choices)]


@pytest.fixture
def scene(world):
    a, b = world.annotators
    mine = next_assignment(study=world.study, annotator=a)
    theirs = next_assignment(study=world.study, annotator=b)
    assert mine.item_id == theirs.item_id  # breadth first: they share the item
    submit_annotation(
        assignment=theirs,
        user=b,
        notes=SECRET,
        labels=world.labels(screening="relevant", symptom="hang", fix="version"),
    )
    their_draft = next_assignment(study=world.study, annotator=b)
    save_draft(assignment=their_draft, user=b, notes=SECRET, labels=world.labels(symptom="oom"))
    invitation = create_invitation(study=world.study)
    annotation = Annotation.objects.get(assignment=theirs)
    ids = [mine.pk, theirs.pk, their_draft.pk, mine.item_id, their_draft.item_id, annotation.pk]
    ids = [str(i) for i in dict.fromkeys(ids)]
    issue_ids = _similar_issues_everywhere(world)
    values = {
        "issue_id": issue_ids,
        "study_id": [str(world.study.pk)],
        "assignment_id": [str(mine.pk), str(theirs.pk), str(their_draft.pk)],
        "item_id": [str(mine.item_id), str(their_draft.item_id)],
        "token": [invitation.token],
        "*": ids,
    }
    return {"world": world, "a": a, "b": b, "theirs": theirs, "values": values}


def _similar_issues_everywhere(world) -> list[str]:
    """Every issue of the study lists the others as similar (annotator/similarity), so the
    similar-issues panel and API, walked below, have B's labeled issue to show or withhold."""
    from annotator.similarity.models import SimilarIssues
    from annotator.similarity.services import start_duplicate_pass

    job = start_duplicate_pass(enqueue=False)
    ids = [issue.pk for issue in world.issues]
    for pk in ids:
        others = [[other, 0.5] for other in ids if other != pk]
        SimilarIssues.objects.create(issue_id=pk, neighbours=others, found_by=job)
    return [str(pk) for pk in ids]


def all_urls(values: dict[str, list[str]]) -> list[tuple[str, str]]:
    urls = []
    for route, _ in walk(get_resolver().url_patterns):
        urls += [(route, url) for url in concrete_urls(route, values)]
    return urls


def record(client, urls) -> dict[tuple[str, bool], tuple[int, str]]:
    answers = {}
    for _, url in urls:
        for htmx in (False, True):
            response = client.get(url, **(HTMX if htmx else {}))
            body = b"".join(response) if getattr(response, "streaming", False) else response.content
            text = TOKENS.sub(r"\1", body.decode("utf-8", "replace"))
            answers[(url, htmx)] = (response.status_code, text)
    return answers


def relabel_b(scene) -> None:
    """Change what B labeled (not whether): a different category, other notes."""
    world, theirs = scene["world"], scene["theirs"]
    AnnotationLabel.objects.filter(annotation__assignment=theirs, facet__key="symptom").update(
        category=world.category("symptom", "crash")
    )
    AnnotationLabel.objects.filter(annotation__assignment=theirs, facet__key="fix").update(
        category=world.category("fix", "config")
    )
    Annotation.objects.filter(assignment__annotator=scene["b"]).update(notes=SECRET + "-2")


# The URLs are read in shards, so that parallel test workers share them; each shard reads its
# URLs before and after B's labels change.
SHARDS = 3


@pytest.mark.parametrize("shard", range(SHARDS))
def test_no_route_shows_an_annotator_anothers_labels(client, scene, shard):
    every = all_urls(scene["values"])
    routes = {route for route, _ in every}
    assert len(routes) >= 60 and any(r.startswith("studies/") for r in routes)
    assert any(r.startswith("api/") and "assignments" in r for r in routes)
    urls = every[shard::SHARDS]
    client.force_login(scene["a"])

    before = record(client, urls)
    relabel_b(scene)
    after = record(client, urls)

    leaks = [key for key in before if before[key] != after[key]]
    assert leaks == [], f"A's view depends on B's labels at {leaks[:5]}"
    assert not [key for key, (_, text) in after.items() if SECRET in text]
    # not vacuous: A reached their own annotate page and the API (in the shard reading them)
    mine = scene["values"]["assignment_id"][0]
    expected = {
        f"/studies/assignments/{mine}/": 200,
        f"/api/assignments/{mine}/": 200,
        f"/studies/assignments/{scene['theirs'].pk}/": 404,
        f"/similarity/issues/{scene['values']['issue_id'][0]}/similar/": 200,
        f"/api/issues/{scene['values']['issue_id'][0]}/similar/": 200,
    }
    for url, status in expected.items():
        assert (url, False) not in before or before[(url, False)][0] == status, url
    assert sum(200 <= status < 300 for status, _ in before.values()) > 20  # ~30-40 a shard


def test_the_shards_read_every_url_that_matters(scene):
    every = all_urls(scene["values"])
    shards = [every[shard::SHARDS] for shard in range(SHARDS)]
    assert sorted(u for s in shards for u in s) == sorted(every)
    mine = scene["values"]["assignment_id"][0]
    urls = {url for _, url in every}
    assert {f"/studies/assignments/{mine}/", f"/api/assignments/{mine}/"} <= urls
    assert f"/studies/assignments/{scene['theirs'].pk}/" in urls
    issue = scene["values"]["issue_id"][0]
    assert {f"/similarity/issues/{issue}/similar/", f"/api/issues/{issue}/similar/"} <= urls


def test_no_post_answer_carries_anothers_labels(client, scene):
    client.force_login(scene["a"])
    for route, url in all_urls(scene["values"]):
        if not route.startswith(("studies/", "api/studies", "api/assignments")):
            continue  # other apps' POSTs create codebooks and imports; they hold no labels
        for htmx in (False, True):
            response = client.post(url, {}, **(HTMX if htmx else {}))
            assert SECRET not in response.content.decode("utf-8", "replace"), url


def test_the_comparison_sees_a_leak_where_one_is_allowed(client, scene):
    client.force_login(scene["world"].owner)
    urls = [
        ("", f"/studies/items/{scene['theirs'].item_id}/"),
        ("", f"/api/studies/{scene['world'].study.pk}/annotations/"),
    ]
    before = record(client, urls)
    relabel_b(scene)
    after = record(client, urls)
    assert all(before[key] != after[key] for key in before)


def test_released_item_shows_others_labels_only_after_ones_own_submit(client, scene):
    world, a = scene["world"], scene["a"]
    mine = Assignment.objects.get(annotator=a)
    item_url = f"/studies/items/{mine.item_id}/"
    api_url = f"/api/studies/{world.study.pk}/annotations/"
    client.force_login(a)
    mine.item.released_at = timezone.now()
    mine.item.save()
    assert SECRET not in client.get(api_url).content.decode()
    assert client.get(item_url).status_code == 404  # nothing of A's to show yet
    submit_annotation(assignment=mine, user=a, labels=world.labels(screening="relevant"))
    assert SECRET in client.get(item_url).content.decode()
    assert SECRET in client.get(api_url).content.decode()
