"""Issue list, issue page and import pages: content, partials, safety and query counts."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from annotator.issues.models import ImportJob, Issue
from tests.factories import IssueCommentFactory, IssueFactory, RepositoryFactory
from tests.issues.test_import_service import COMMENTS, ISSUES

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db):  # type: ignore[no-untyped-def]
    call_command("import_issues", str(ISSUES), stdout=io.StringIO())
    call_command("import_issues", str(COMMENTS), stdout=io.StringIO())


def test_pages_require_login(client):
    response = client.get(reverse("issues:list"))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_list_shows_the_demo_issues(logged_in_client, demo):
    response = logged_in_client.get(reverse("issues:list"))

    assert response.status_code == 200
    assert response.context["page"].paginator.count == 36
    assert b"hpcaitech/ColossalAI#" in response.content
    assert b"<html" in response.content


def test_htmx_search_returns_only_the_results_partial(logged_in_client, demo):
    response = logged_in_client.get(
        reverse("issues:list"),
        {"q": "NCCL"},
        headers={"HX-Request": "true", "HX-Target": "issue-results"},
    )

    assert response.status_code == 200
    assert b"<html" not in response.content
    assert response.content.lstrip().startswith(b'<section id="issue-results"')
    pks = [int(pk) for pk in re.findall(r'href="/issues/(\d+)/"', response.content.decode())]
    assert len(pks) >= 3, "the demo has several issues that mention NCCL"
    for issue in Issue.objects.filter(pk__in=pks).prefetch_related("comments"):
        text = " ".join([issue.title, issue.body, *(c.body for c in issue.comments.all())])
        assert "nccl" in text.lower()


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"state": "open"}, {1}),
        ({"state": "closed"}, {2, 3}),
        ({"kind": "pr"}, {3}),
        ({"kind": "issue"}, {1, 2}),
        ({"label": "distributed"}, {2}),
        ({"since": "2023-02-01"}, {2, 3}),
        ({"until": "2023-02-01"}, {1}),
        ({"since": "not a date"}, {1, 2, 3}),
    ],
)
def test_list_filters(logged_in_client, params, expected):
    repository = RepositoryFactory()
    IssueFactory(
        repository=repository,
        number=1,
        state="open",
        labels=["bug"],
        created_at=datetime(2023, 1, 1, tzinfo=UTC),
    )
    IssueFactory(
        repository=repository,
        number=2,
        state="closed",
        labels=["bug", "distributed"],
        created_at=datetime(2023, 3, 1, tzinfo=UTC),
    )
    IssueFactory(
        repository=repository,
        number=3,
        state="closed",
        is_pull_request=True,
        created_at=datetime(2023, 4, 1, tzinfo=UTC),
    )

    response = logged_in_client.get(reverse("issues:list"), params)

    assert {issue.number for issue in response.context["page"].object_list} == expected


def test_list_filters_by_repository(logged_in_client):
    wanted, other = RepositoryFactory(), RepositoryFactory()
    IssueFactory(repository=wanted, number=1)
    IssueFactory(repository=other, number=2)

    response = logged_in_client.get(reverse("issues:list"), {"repository": wanted.pk})

    assert [issue.number for issue in response.context["page"].object_list] == [1]


def test_list_query_count_does_not_grow_with_issues(
    logged_in_client, django_assert_max_num_queries
):
    repository = RepositoryFactory()
    for number in range(1, 4):
        IssueFactory(repository=repository, number=number)
    with django_assert_max_num_queries(8) as few:
        logged_in_client.get(reverse("issues:list"))
    IssueFactory.create_batch(60, repository=repository)

    with django_assert_max_num_queries(len(few.captured_queries)):
        response = logged_in_client.get(reverse("issues:list"), {"page": 2})

    assert len(response.context["page"].object_list) == 25


def test_issue_page_query_count_does_not_grow_with_comments(
    logged_in_client, django_assert_max_num_queries
):
    issue = IssueFactory()
    IssueCommentFactory(issue=issue)
    with django_assert_max_num_queries(8) as few:
        logged_in_client.get(issue.get_absolute_url())
    IssueCommentFactory.create_batch(40, issue=issue)

    with django_assert_max_num_queries(len(few.captured_queries)):
        response = logged_in_client.get(issue.get_absolute_url())

    assert len(response.context["comments"]) == 41


def test_issue_page_renders_code_blocks_and_comments(logged_in_client):
    issue = IssueFactory(body="Crash:\n```text\nRuntimeError: NCCL error\n```\n")
    IssueCommentFactory(issue=issue, body="Try **this**.")

    response = logged_in_client.get(issue.get_absolute_url())

    content = response.content.decode()
    assert '<pre tabindex="0"><code class="language-text">RuntimeError: NCCL error' in content
    assert "<strong>this</strong>" in content
    assert issue.github_url in content


@pytest.mark.parametrize(
    "payload",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "[click](javascript:alert(1))",
        '<a href="jav&#x09;ascript:alert(1)">x</a>',
        '<iframe src="https://evil.example"></iframe>',
        '<form action="https://evil.example"><button>go</button></form>',
        '<div style="background:url(javascript:alert(1))">x</div>',
        "<svg onload=alert(1)>",
    ],
)
def test_issue_page_never_serves_active_content_from_bodies(logged_in_client, payload):
    issue = IssueFactory(title=payload, body=payload)
    IssueCommentFactory(issue=issue, body=payload)

    page = TagCollector.parse(logged_in_client.get(issue.get_absolute_url()).content.decode())

    assert page.scripts == ["/static/js/htmx.min.js", "/static/js/app.js"]
    assert page.forms == ["/logout/"]
    assert not {"iframe", "svg", "object", "embed"} & page.tags
    for tag, name, value in page.attributes:
        assert not name.startswith("on"), (tag, name)
        assert name != "style", tag
        if name in {"href", "src", "action"}:
            assert not value.strip().lower().startswith(("javascript:", "data:")), (tag, value)


class TagCollector(HTMLParser):
    """Records what a browser would act on: tags, attributes, scripts and form targets."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: list[tuple[str, str, str]] = []
        self.scripts: list[str] = []
        self.forms: list[str] = []

    @classmethod
    def parse(cls, html: str) -> TagCollector:
        collector = cls()
        collector.feed(html)
        return collector

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]
        values = dict(attrs)
        if tag == "script":
            self.scripts.append(values.get("src") or "inline")
        if tag == "form":
            self.forms.append(values.get("action") or "")


def test_upload_creates_a_job_and_redirects_to_its_progress(logged_in_client):
    upload = SimpleUploadedFile("issues.json", ISSUES.read_bytes(), "application/json")

    response = logged_in_client.post(reverse("issues:import"), {"file": upload, "format": "auto"})

    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == job.get_absolute_url()
    assert job.original_name == "issues.json"
    assert job.size_bytes == ISSUES.stat().st_size


def test_upload_of_an_empty_file_shows_the_error_and_creates_no_job(logged_in_client):
    upload = SimpleUploadedFile("empty.json", b"", "application/json")

    response = logged_in_client.post(reverse("issues:import"), {"file": upload, "format": "auto"})

    assert response.status_code == 400
    assert "The submitted file is empty." in response.content.decode()
    assert ImportJob.objects.count() == 0


def test_upload_with_a_bad_repository_name_is_refused(logged_in_client):
    upload = SimpleUploadedFile("issues.json", b"[]", "application/json")

    response = logged_in_client.post(
        reverse("issues:import"), {"file": upload, "format": "auto", "repository": "nope"}
    )

    assert response.status_code == 400
    assert "Give the repository as OWNER/NAME." in response.content.decode()


def test_job_status_partial_stops_polling_when_finished(logged_in_client):
    job = ImportJob.objects.create(
        original_name="x.json", status=ImportJob.Status.SUCCEEDED, created=3, size_bytes=10
    )

    running = logged_in_client.get(job.get_absolute_url())
    partial = logged_in_client.get(job.get_absolute_url(), headers={"HX-Request": "true"})

    assert b"<html" in running.content
    assert partial.status_code == 286
    assert b"<html" not in partial.content
    assert b"created 3, updated 0, unchanged 0, skipped 0" in partial.content


def test_failed_job_page_says_nothing_was_imported(logged_in_client):
    job = ImportJob.objects.create(
        original_name="x.json",
        status=ImportJob.Status.FAILED,
        error="record 2: field 'number': missing",
    )

    content = logged_in_client.get(job.get_absolute_url()).content.decode()

    assert "Nothing was imported: record 2: field &#x27;number&#x27;: missing" in content
