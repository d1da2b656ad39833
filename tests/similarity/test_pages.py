"""The review page, marks through the pages, the pass page, the similar-issues panel, the API."""

from __future__ import annotations

import itertools

import pytest

from annotator.similarity.models import DuplicateMark, DuplicatePass, SimilarIssues
from annotator.similarity.services import (
    duplicate_issue_ids,
    run_duplicate_pass,
    start_duplicate_pass,
)
from annotator.studies.services import next_assignment, submit_annotation
from tests.factories import IssueFactory, RepositoryFactory
from tests.similarity.test_duplicates import OTHERS, report, respaced

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def found(world):
    repository = RepositoryFactory(owner="deepspeedai", name="DeepSpeed")
    first = IssueFactory(repository=repository, title="ZeRO-3 hang", body=report())
    second = IssueFactory(
        repository=repository, title="ZeRO-3 hang again", body=respaced(report(rank="5"))
    )
    for i, text in enumerate(OTHERS):
        IssueFactory(repository=repository, title=f"Other {i}", body=text)
    job = start_duplicate_pass(enqueue=False, study=world.study)
    run_duplicate_pass(pass_id=job.pk)
    return {"first": first, "second": second, "job": job, "world": world}


def test_the_owner_sees_groups_with_similarity_and_reviews_one_side_by_side(client, found):
    world = found["world"]
    client.force_login(world.owner)
    page = client.get(f"/similarity/studies/{world.study.pk}/duplicates/")
    text = page.content.decode()
    assert page.status_code == 200 and "Group of 2" in text and "same error signature" in text
    group = found["first"].duplicate_members.get().group_id
    detail = client.get(f"/similarity/studies/{world.study.pk}/duplicates/groups/{group}/")
    body = detail.content.decode()
    assert body.count('data-issue="') == 2 and "Duplicate of #" in body and "Distinct" in body


def test_groups_partial_for_htmx_and_filter_to_the_study(client, found):
    world = found["world"]
    client.force_login(world.owner)
    url = f"/similarity/studies/{world.study.pk}/duplicates/?in_study=1"
    partial = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="duplicate-groups")
    text = partial.content.decode()
    assert text.lstrip().startswith('<section id="duplicate-groups"')
    # The study's own four issues ("Issue n", "Something broke.") differ only in a number: one
    # group; the DeepSpeed pair is in no study.
    assert "Groups (1)" in text and "Group of 4" in text and "ZeRO-3" not in text


def test_marking_a_duplicate_asks_for_confirmation_then_records_and_undoes(client, found):
    world, first, second = found["world"], found["first"], found["second"]
    client.force_login(world.owner)
    base = f"/similarity/studies/{world.study.pk}/duplicates"
    ask = client.get(f"{base}/mark/?issue={second.pk}&duplicate_of={first.pk}", **HTMX)
    assert "left out of" in ask.content.decode() and not DuplicateMark.objects.exists()
    done = client.post(
        f"{base}/mark/", {"issue": second.pk, "duplicate_of": first.pk, "decision": "duplicate"}
    )
    assert done.status_code == 302
    mark = DuplicateMark.objects.get()
    assert mark.decided_by == world.owner and mark.similarity is not None
    assert duplicate_issue_ids(study=world.study) == {second.pk}
    client.post(f"{base}/marks/{mark.pk}/undo/")
    assert duplicate_issue_ids(study=world.study) == set()
    history = client.get(f"{base}/").content.decode()
    assert "undone" in history


def test_a_bad_mark_shows_the_message_and_writes_nothing(client, found):
    world = found["world"]
    client.force_login(world.owner)
    base = f"/similarity/studies/{world.study.pk}/duplicates"
    answer = client.post(
        f"{base}/mark/", {"issue": found["second"].pk, "decision": "duplicate"}, follow=True
    )
    assert "field &#x27;duplicate_of&#x27;" in answer.content.decode()
    assert not DuplicateMark.objects.exists()


def test_annotators_and_strangers_get_404_on_the_review_pages(client, found):
    world = found["world"]
    base = f"/similarity/studies/{world.study.pk}/duplicates/"
    client.force_login(world.annotators[0])
    assert client.get(base).status_code == 404
    assert client.post(f"{base}mark/", {"issue": found["second"].pk}).status_code == 404
    assert client.post(f"{base}passes/").status_code == 404
    assert not DuplicateMark.objects.exists()


def test_the_owner_starts_a_pass_and_its_page_shows_progress(client, world, settings):
    client.force_login(world.owner)
    answer = client.post(f"/similarity/studies/{world.study.pk}/duplicates/passes/")
    job = DuplicatePass.objects.latest("created_at")
    assert answer.status_code == 302 and answer["Location"] == f"/similarity/passes/{job.pk}/"
    page = client.get(answer["Location"]).content.decode()
    assert 'id="pass-progress"' in page


def test_the_similar_panel_on_the_issue_page(client, found):
    world, first, second = found["world"], found["first"], found["second"]
    client.force_login(world.owner)
    page = client.get(f"/issues/{first.pk}/").content.decode()
    assert f'hx-get="/similarity/issues/{first.pk}/similar/"' in page
    panel = client.get(f"/similarity/issues/{first.pk}/similar/", **HTMX).content.decode()
    assert panel.lstrip().startswith('<section id="similar-issues"')
    assert f'data-similar="{second.pk}"' in panel


def test_an_annotator_sees_in_the_panel_only_what_they_labeled_with_their_own_labels(client, world):
    a = world.annotators[0]
    assignment = next_assignment(study=world.study, annotator=a)
    submit_annotation(
        assignment=assignment, user=a, labels=world.labels(screening="relevant", symptom="hang")
    )
    mine = assignment.item.issue
    unseen = IssueFactory()
    job = start_duplicate_pass(enqueue=False)
    anchor = world.issues[0] if world.issues[0] != mine else world.issues[1]
    SimilarIssues.objects.create(
        issue=anchor, neighbours=[[unseen.pk, 0.9], [mine.pk, 0.8]], found_by=job
    )
    client.force_login(a)
    panel = client.get(f"/similarity/issues/{anchor.pk}/similar/", **HTMX).content.decode()
    assert f'data-similar="{mine.pk}"' in panel and f'data-similar="{unseen.pk}"' not in panel
    assert "your labels:" in panel
    api = client.get(f"/api/issues/{anchor.pk}/similar/").json()
    assert [row["issue"] for row in api] == [mine.pk] and api[0]["labels"]


def test_api_groups_marks_and_passes(client, found):
    world, first, second = found["world"], found["first"], found["second"]
    client.force_login(world.owner)
    groups = client.get("/api/duplicate-groups/?repository=deepspeedai/DeepSpeed").json()
    rows = groups["results"] if isinstance(groups, dict) else groups
    assert [sorted(i["id"] for i in g["issues"]) for g in rows] == [sorted([first.pk, second.pk])]
    assert rows[0]["pairs"][0]["similarity"] >= 0.9
    url = f"/api/studies/{world.study.pk}/duplicate-marks/"
    bad = client.post(url, {"issue": second.pk, "decision": "duplicate"}, "application/json")
    assert bad.status_code == 400 and "duplicate_of" in bad.json()["detail"]
    made = client.post(
        url,
        {"issue": second.pk, "decision": "duplicate", "duplicate_of": first.pk},
        "application/json",
    )
    assert made.status_code == 201 and made.json()["decided_by"] == world.owner.get_username()
    undo = client.post(f"{url}{made.json()['id']}/undo/")
    assert undo.status_code == 200 and undo.json()["withdrawn_at"]
    assert len(client.get(url).json()) == 1
    started = client.post(
        "/api/duplicate-passes/", {"repository": "nobody/none"}, "application/json"
    )
    assert started.status_code == 400 and "nobody/none" in started.content.decode()
    detail = client.get(f"/api/duplicate-passes/{found['job'].pk}/").json()
    assert detail["status"] == "succeeded" and detail["counts"]["groups"] == 2


def test_api_marks_are_for_owners_only(client, found):
    world = found["world"]
    client.force_login(world.annotators[0])
    url = f"/api/studies/{world.study.pk}/duplicate-marks/"
    assert client.get(url).status_code == 404
    assert client.post("/api/duplicate-passes/", {}, "application/json").status_code == 404


def test_the_schema_lists_the_routes(client, world):
    client.force_login(world.owner)
    schema = client.get("/api/schema/?format=json").json()
    for route in (
        "/api/duplicate-groups/",
        "/api/duplicate-passes/",
        "/api/studies/{study_id}/duplicate-marks/",
        "/api/issues/{issue_id}/similar/",
    ):
        assert route in schema["paths"], route


def _planted_group(job, issues, similarity):
    from annotator.similarity.models import DuplicateGroup, DuplicateMember, DuplicatePair

    group = DuplicateGroup.objects.create(
        found_by=job, size=len(issues), max_similarity=similarity, min_similarity=similarity
    )
    DuplicateMember.objects.bulk_create(DuplicateMember(group=group, issue=i) for i in issues)
    DuplicatePair.objects.create(
        group=group, issue_a=issues[0], issue_b=issues[1], similarity=similarity
    )
    return group


def test_the_review_pages_show_each_groups_issues_marks_and_pairs_in_queries_the_groups_do_not_grow(
    client, found
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    world, first, second = found["world"], found["first"], found["second"]
    client.force_login(world.owner)
    base = f"/similarity/studies/{world.study.pk}/duplicates"
    client.post(
        f"{base}/mark/", {"issue": second.pk, "duplicate_of": first.pk, "decision": "duplicate"}
    )

    def page(url):
        with CaptureQueriesContext(connection) as queries:
            answer = client.get(url)
        assert answer.status_code == 200
        return answer.content.decode(), len(queries)

    assert "Recorded:" in page(f"{base}/")[0]  # the message is shown (and read) once
    before, queries_before = page(f"{base}/")
    assert "Groups (2)" in before
    assert f"duplicate of #{first.number}" in before and "in the study" in before
    assert f"#{first.number}\N{EN DASH}#{second.number}: " in before or (
        f"#{second.number}\N{EN DASH}#{first.number}: " in before
    )
    repository = RepositoryFactory(owner="horovod", name="horovod")
    planted = []
    for n in range(6):
        issues = [IssueFactory(repository=repository, title=f"Planted {n}-{k}") for k in range(3)]
        planted.append((_planted_group(found["job"], issues, 0.5 + n / 100), issues))
    after, queries_after = page(f"{base}/")
    assert "Groups (8)" in after and queries_after == queries_before
    for group, issues in planted:
        assert f'data-group="{group.pk}"' in after
        assert f"horovod/horovod#{issues[0].number}</a> Planted" in after
        assert (
            f"#{issues[0].number}\N{EN DASH}#{issues[1].number}: {group.max_similarity:.2f}"
            in after
        )

    group = first.duplicate_members.get().group_id
    side, side_queries = page(f"{base}/groups/{group}/")
    assert "ZeRO-3 hang" in side and "Duplicate of deepspeedai/DeepSpeed#" in side
    assert side.count('data-issue="') == 2 and 'class="issue-body markdown"' in side
    assert "No description." not in side  # the bodies are read for this page
    big, _ = planted[0]
    _, big_queries = page(f"{base}/groups/{big.pk}/")
    assert big_queries == side_queries


def test_a_group_of_thousands_is_shown_a_page_at_a_time_the_studys_issues_first(client, found):
    """A template filed many times makes one group of many issues: the list names its first
    issues and most similar pairs, the side-by-side page pages through it, and neither grows
    with the group (nor offers a link per pair of its issues)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotator.similarity.models import DuplicatePair
    from annotator.similarity.views import SHOWN
    from annotator.studies.models import Item

    world = found["world"]
    repository = RepositoryFactory(owner="horovod", name="horovod")
    issues = [IssueFactory(repository=repository, title=f"Template {k}") for k in range(30)]
    held = issues[-3:]  # the study's, though the last by id
    for n, issue in enumerate(held):
        Item.objects.create(
            study=world.study, round=world.round, issue=issue, position=900 + n, quota=2
        )
    group = _planted_group(found["job"], issues, 0.71)
    DuplicatePair.objects.bulk_create(
        DuplicatePair(group=group, issue_a=a, issue_b=b, similarity=0.72 + n / 100)
        for n, (a, b) in enumerate(itertools.pairwise(issues[1:]))
    )
    client.force_login(world.owner)
    base = f"/similarity/studies/{world.study.pk}/duplicates"

    def page(url):
        with CaptureQueriesContext(connection) as queries:
            answer = client.get(url)
        assert answer.status_code == 200
        return answer.content.decode(), len(queries)

    listed, listed_queries = page(f"{base}/")
    card = listed.split(f'data-group="{group.pk}"')[1].split("</article>")[0]
    at = {i: card.find(f"horovod/horovod#{i.number}</a>") for i in issues}
    shown = sorted((i for i in issues if at[i] >= 0), key=at.__getitem__)
    assert shown == held + issues[: SHOWN - 3]  # the study's first, then by id
    assert "and 18 more issues" in card and card.count("in the study") == 3
    assert card.count("\N{EN DASH}") == SHOWN and "The most similar pairs: " in card
    assert f"#{issues[28].number}\N{EN DASH}#{issues[29].number}: 0.99" in card  # the highest

    first, first_queries = page(f"{base}/groups/{group.pk}/")
    assert first.count('data-issue="') == SHOWN and "Issues 1\N{EN DASH}12 of 30" in first
    assert first.count("Duplicate of #") == SHOWN * (SHOWN - 1)  # the others on the page
    assert "(the group's first)" not in first and "page 1 of 3" in first
    last, last_queries = page(f"{base}/groups/{group.pk}/?page=3")
    at = {i: last.find(f'data-issue="{i.pk}"') for i in issues}
    cards = sorted((i for i in issues if at[i] >= 0), key=at.__getitem__)
    assert cards == issues[21:27] and "Issues 25\N{EN DASH}30 of 30" in last
    back = f"/similarity/studies/{world.study.pk}/duplicates/groups/{group.pk}/%3Fpage%3D3"
    lead = f"duplicate_of={held[0].pk}&amp;next={back}"
    assert last.count(lead) == 2 * 6  # each card: its link and its htmx twin
    assert f"Duplicate of #{held[0].number} (the group's first)" in last

    small = _planted_group(found["job"], issues[:2], 0.9)
    assert page(f"{base}/groups/{small.pk}/")[1] == first_queries
    assert last_queries == first_queries + 1  # the group's first, named past page 1
    warm = page(f"{base}/")[1]  # the first request also read what a session caches
    _planted_group(found["job"], [IssueFactory(repository=repository) for _ in range(40)], 0.8)
    assert page(f"{base}/")[1] == warm <= listed_queries
