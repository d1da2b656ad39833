"""The issue list at scale: counts past a limit are the database's estimate and say so, broad
searches list newest first and say so, ranked searches rank their newest matches and count them
in the same pass, date windows take whole days."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.issues import models as issue_models
from annotator.issues.search import index_pending_issues
from annotator.paging import EstimatedPaginator, planned_rows
from tests.factories import IssueFactory, RepositoryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def thirty_issues():  # type: ignore[no-untyped-def]
    repository = RepositoryFactory()
    for n in range(1, 31):
        IssueFactory(
            repository=repository,
            number=n,
            title=f"NCCL timeout number {n}",
            created_at=datetime(2023, 1, n, tzinfo=UTC),
        )
    index_pending_issues()
    with connection.cursor() as cursor:  # the planner's statistics, as autovacuum keeps them
        cursor.execute("ANALYZE issues_issue")


def test_the_planner_expects_about_the_rows_there_are(thirty_issues):
    expected = planned_rows(issue_models.Issue.objects.all())

    assert expected is not None and 20 <= expected <= 40


def test_a_count_past_the_limit_is_the_estimate_and_the_page_says_so(
    logged_in_client, thirty_issues, monkeypatch
):
    monkeypatch.setattr(EstimatedPaginator, "exact_limit", 5)

    response = logged_in_client.get(reverse("issues:list"))

    paginator = response.context["page"].paginator
    assert paginator.count_is_estimate
    assert paginator.count == planned_rows(issue_models.Issue.objects.all())
    assert "About " in response.content.decode()
    assert "(the database's estimate: counting every match" in response.content.decode()


def test_a_count_under_the_limit_is_exact_and_plain(logged_in_client, thirty_issues):
    response = logged_in_client.get(reverse("issues:list"))

    paginator = response.context["page"].paginator
    assert not paginator.count_is_estimate and paginator.count == 30
    assert "30 issues" in response.content.decode()
    assert "estimate" not in response.content.decode()


def test_the_api_says_whether_its_count_is_an_estimate(client, user, thirty_issues, monkeypatch):
    client.force_login(user)
    assert client.get("/api/issues/").json()["count_is_estimate"] is False

    monkeypatch.setattr(EstimatedPaginator, "exact_limit", 5)
    body = client.get("/api/issues/").json()

    assert body["count_is_estimate"] is True
    assert len(body["results"]) == 30


def test_a_search_with_too_many_matches_to_rank_lists_newest_first_and_says_so(
    logged_in_client, thirty_issues, monkeypatch
):
    ranked = logged_in_client.get(reverse("issues:list"), {"q": "nccl timeout"})
    assert ranked.context["ranked"]
    assert "Too many matches to rank" not in ranked.content.decode()

    monkeypatch.setattr(issue_models, "RANK_LIMIT", 5)
    response = logged_in_client.get(reverse("issues:list"), {"q": "nccl timeout"})

    numbers = [issue.number for issue in response.context["page"].object_list]
    assert not response.context["ranked"]
    assert numbers == list(range(30, 5, -1))  # newest first, the first page of 25
    assert "Too many matches to rank by relevance: newest first." in response.content.decode()


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"until": "2023-02-01"}, {1, 2}),
        ({"since": "2023-02-01"}, {2, 3}),
        ({"since": "2023-02-01", "until": "2023-02-01"}, {2}),
    ],
)
def test_a_date_window_takes_whole_days(logged_in_client, params, expected):
    repository = RepositoryFactory()
    for number, at in [
        (1, datetime(2023, 1, 31, 23, 59, 59, tzinfo=UTC)),
        (2, datetime(2023, 2, 1, 23, 59, 59, tzinfo=UTC)),
        (3, datetime(2023, 2, 2, 0, 0, 0, tzinfo=UTC)),
    ]:
        IssueFactory(repository=repository, number=number, created_at=at)

    response = logged_in_client.get(reverse("issues:list"), params)

    assert {issue.number for issue in response.context["page"].object_list} == expected


def test_a_stale_estimate_past_the_limit_is_checked_by_a_capped_count(
    logged_in_client, thirty_issues, monkeypatch
):
    issue_models.Issue.objects.filter(number__gt=10).delete()  # the statistics still say 30
    monkeypatch.setattr(EstimatedPaginator, "exact_limit", 15)
    assert planned_rows(issue_models.Issue.objects.all()) > 15

    response = logged_in_client.get(reverse("issues:list"))

    paginator = response.context["page"].paginator
    assert not paginator.count_is_estimate and paginator.count == 10
    assert "10 issues" in response.content.decode()


def test_indexing_a_large_import_refreshes_the_planner_statistics(monkeypatch):
    from annotator.issues import search

    monkeypatch.setattr(search, "ANALYZE_AFTER", 20)
    repository = RepositoryFactory()
    for n in range(1, 31):
        IssueFactory(repository=repository, number=n)

    assert search.index_pending_issues() == 30
    assert planned_rows(issue_models.Issue.objects.all()) == 30


def test_a_large_import_refreshes_the_planner_statistics_when_it_commits(
    monkeypatch, django_capture_on_commit_callbacks
):
    """The import stores the search vectors itself, so no indexing follows it to ANALYZE."""
    from annotator.issues import search
    from tests.issues.test_import_service import rest_issue, run

    monkeypatch.setattr(search, "ANALYZE_AFTER", 20)
    with django_capture_on_commit_callbacks(execute=True):
        run([rest_issue(n) for n in range(1, 31)], index_for_search=False)

    assert search.pending_issue_count() == 0
    assert planned_rows(issue_models.Issue.objects.all()) == 30


def test_a_ranked_search_ranks_its_newest_matches_and_lists_the_rest_newest_first(
    logged_in_client, monkeypatch
):
    """Past RANK_WINDOW matches only the newest are ranked (reading a vector per ranked match);
    the older ones follow, newest first, and every match is still listed and counted."""
    repository = RepositoryFactory()
    for n in range(1, 9):
        # Odd numbers say "deadlock" three times, so they rank above the even ones.
        IssueFactory(
            repository=repository,
            number=n,
            title="deadlock" + " deadlock deadlock" * (n % 2),
            created_at=datetime(2023, 1, n, tzinfo=UTC),
        )
    index_pending_issues()
    monkeypatch.setattr(issue_models, "RANK_WINDOW", 4)

    response = logged_in_client.get(reverse("issues:list"), {"q": "deadlock"})

    numbers = [issue.number for issue in response.context["page"].object_list]
    assert response.context["ranked"]
    assert numbers == [7, 5, 8, 6, 4, 3, 2, 1]  # the newest four by rank, then by age
    assert response.context["page"].paginator.count == 8
    assert "8 issues" in response.content.decode()
    assert "The newest 4 matches by relevance, then the older ones" in response.content.decode()
    monkeypatch.setattr(issue_models, "RANK_WINDOW", 8)
    everything = logged_in_client.get(reverse("issues:list"), {"q": "deadlock"})
    assert [issue.number for issue in everything.context["page"].object_list][:4] == [7, 5, 3, 1]
    assert "The newest" not in everything.content.decode()  # all 8 ranked


def test_a_ranked_search_is_counted_from_its_first_page_without_a_count_query(
    logged_in_client, thirty_issues
):
    with CaptureQueriesContext(connection) as queries:
        response = logged_in_client.get(reverse("issues:list"), {"q": "nccl timeout"})

    assert response.context["ranked"] and response.context["page"].paginator.count == 30
    counts = [q["sql"] for q in queries if "COUNT(*)" in q["sql"] and "@@" in q["sql"]]
    assert counts == []
    second = logged_in_client.get(reverse("issues:list"), {"q": "nccl timeout", "page": 2})
    assert [issue.number for issue in second.context["page"].object_list][-1] == 1
    assert second.context["page"].paginator.count == 30
    empty = logged_in_client.get(reverse("issues:list"), {"q": "nothingmatchesthis"})
    assert empty.context["page"].paginator.count == 0
    assert "No issues match." in empty.content.decode()


def test_the_api_counts_a_ranked_search_from_its_rows(client, user, thirty_issues):
    client.force_login(user)

    body = client.get("/api/issues/", {"q": "nccl timeout"}).json()

    assert body["count"] == 30 and body["count_is_estimate"] is False
    assert len(body["results"]) == 30


def test_a_search_listed_newest_first_is_not_counted_by_a_capped_count(
    logged_in_client, thirty_issues, monkeypatch
):
    """A search with too many matches to rank still finds them through the full-text index,
    whose capped count builds the bitmap of every match (0.6 to 2.4 s for "nccl timeout" at a
    million issues): past the exact limit its count is the estimate."""
    monkeypatch.setattr(issue_models, "RANK_LIMIT", 5)
    monkeypatch.setattr(EstimatedPaginator, "exact_limit", 5)

    with CaptureQueriesContext(connection) as queries:
        response = logged_in_client.get(reverse("issues:list"), {"q": "nccl timeout"})

    paginator = response.context["page"].paginator
    assert not response.context["ranked"]
    assert paginator.count_is_estimate and paginator.count > 5
    counts = [q["sql"] for q in queries if "COUNT(*)" in q["sql"] and "@@" in q["sql"]]
    assert counts == []


def _estimate_short_of_the_rows(monkeypatch):  # type: ignore[no-untyped-def]
    """The planner's estimate six where there are thirty rows, as lagging statistics give it;
    the limit five, so six is taken as "about 6"."""
    import annotator.paging

    monkeypatch.setattr(EstimatedPaginator, "exact_limit", 5)
    monkeypatch.setattr(annotator.paging, "planned_rows", lambda rows: 6)


def test_pages_past_an_estimate_short_of_the_rows_are_served_to_the_last_row(
    logged_in_client, thirty_issues, monkeypatch
):
    _estimate_short_of_the_rows(monkeypatch)

    first = logged_in_client.get(reverse("issues:list"))
    second = logged_in_client.get(reverse("issues:list"), {"page": 2})

    assert first.context["page"].paginator.count_is_estimate
    assert "Page 1 of about 1" in first.content.decode()
    assert "page=2" in first.content.decode()  # a Next link, though the estimate has one page
    numbers = [issue.number for issue in second.context["page"].object_list]
    assert numbers == [5, 4, 3, 2, 1]  # the last five of thirty, newest first
    assert "Next" not in second.content.decode()


def test_a_page_past_the_last_row_of_an_estimate_shows_the_first(
    logged_in_client, thirty_issues, monkeypatch
):
    _estimate_short_of_the_rows(monkeypatch)

    response = logged_in_client.get(reverse("issues:list"), {"page": 3})

    assert response.context["page"].number == 1
    assert [i.number for i in response.context["page"].object_list][:2] == [30, 29]


def test_the_api_pages_past_an_estimate_short_of_the_rows(client, user, thirty_issues, monkeypatch):
    from annotator.api_pagination import EstimatedPagination

    _estimate_short_of_the_rows(monkeypatch)
    monkeypatch.setattr(EstimatedPagination, "page_size", 10)
    client.force_login(user)

    pages, url = [], "/api/issues/"
    while url:
        body = client.get(url).json()
        pages.append([issue["number"] for issue in body["results"]])
        url = body["next"]

    assert body["count"] == 6 and body["count_is_estimate"] is True
    assert [len(page) for page in pages] == [10, 10, 10]  # every row, though "about 6"
    assert sorted(n for page in pages for n in page) == list(range(1, 31))
    assert client.get("/api/issues/?page=4").status_code == 404
    assert client.get("/api/issues/?page=0").status_code == 404
