"""An issue's web URL, which the issue pages link to ("View on GitHub"): imports and syncs take
http(s) URLs on GitHub's hosts only, and the pages link to an http(s) URL whatever is stored."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator

import pytest
from django.urls import reverse

from annotator.issues.formats import ImportFormatError, iter_records
from annotator.issues.models import Issue, Repository
from annotator.issues.writer import check_issue_url
from tests.factories import IssueFactory
from tests.issues.fake_github import FakeGitHub
from tests.issues.test_import_service import rest_issue, run, snapshot
from tests.issues.test_sync import sync

pytestmark = pytest.mark.django_db

BAD_URLS = [
    "javascript:alert(document.cookie)",
    "JavaScript:alert(1)",
    " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "https://evil.example/hpcaitech/ColossalAI/issues/2",
    "https://github.com.evil.example/hpcaitech/ColossalAI/issues/2",
    "//evil.example/x",
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_an_imported_url_off_github_is_refused_naming_the_record_and_field(url: str) -> None:
    run([rest_issue(1)])
    before = snapshot()
    with pytest.raises(ImportFormatError) as error:
        run([rest_issue(1, title="changed"), rest_issue(2, html_url=url)])
    message = str(error.value)
    assert message.startswith("hpcaitech/ColossalAI#2 (record 2): field 'html_url': ")
    assert "must be an http(s) URL on api.github.com or github.com" in message
    assert snapshot() == before  # the import is atomic: issue 1 keeps its title


def test_a_gh_url_and_a_csv_url_are_checked_too() -> None:
    gh = [{"number": 5, "title": "t", "url": "javascript:alert(1)", "author": {"login": "a"}}]
    with pytest.raises(ImportFormatError, match=r"^o/r#5 \(record 1\): field 'url': must be"):
        run(gh, format="gh", repository="o/r")
    csv = 'number,title,repository,html_url\n7,t,o/r,"data:text/html;base64,PHNjcmlwdD4="\n'
    with pytest.raises(ImportFormatError, match=r"^o/r#7 \(record 1\): field 'html_url'"):
        run(csv, format="csv")
    assert Issue.objects.count() == 0


def test_real_github_urls_and_an_empty_one_import() -> None:
    counts = run(
        [
            rest_issue(1),
            rest_issue(2, html_url="https://github.com/hpcaitech/ColossalAI/pull/2"),
            rest_issue(3, html_url="http://GitHub.com/hpcaitech/ColossalAI/issues/3"),
            rest_issue(4, html_url=None),
        ]
    )
    assert counts.created == 4
    assert (
        Issue.objects.get(number=1).html_url == "https://github.com/hpcaitech/ColossalAI/issues/1"
    )


def test_the_configured_github_api_host_serves_issue_pages_too(settings) -> None:  # type: ignore[no-untyped-def]
    settings.GITHUB_API_URL = "https://ghe.example.com/api/v3"
    run([rest_issue(1, html_url="https://ghe.example.com/hpcaitech/ColossalAI/issues/1")])
    assert Issue.objects.get().html_url.startswith("https://ghe.example.com/")


def test_a_github_com_url_is_taken_only_where_github_com_is_one_of_the_hosts() -> None:
    """check_issue_url passes https://github.com/ URLs without parsing them: only when the
    hosts it is given include github.com."""
    text = json.dumps([rest_issue(1)]).encode()
    (record,) = iter_records(io.BytesIO(text), format="github")
    check_issue_url(record, frozenset({"github.com"}))
    with pytest.raises(
        ImportFormatError, match=re.escape("must be an http(s) URL on ghe.example.com")
    ):
        check_issue_url(record, frozenset({"ghe.example.com"}))


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    server = FakeGitHub().start()
    yield server
    server.stop()


def test_a_synced_issue_with_a_javascript_url_is_refused(github: FakeGitHub) -> None:
    github.add_issue(1)
    github.add_issue(2, html_url="javascript:alert(1)")
    with pytest.raises(ImportFormatError, match=rf"^{github.full_name}#2 .*field 'html_url'"):
        sync(github)
    assert Issue.objects.count() == 0
    assert Repository.objects.count() == 1  # the sync's repository row, made before any page


@pytest.mark.parametrize("stored", [*BAD_URLS[:4], "vbscript:msgbox(1)"])
def test_issue_pages_never_link_to_a_stored_non_http_url(logged_in_client, stored: str) -> None:  # type: ignore[no-untyped-def]
    issue = IssueFactory(html_url=stored, number=42)
    canonical = f"https://github.com/{issue.repository.full_name}/issues/42"
    assert issue.github_url == canonical
    page = logged_in_client.get(reverse("issues:detail", args=[issue.pk])).content.decode()
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert canonical in hrefs
    assert all(not h.strip().lower().startswith(("javascript", "data", "vbscript")) for h in hrefs)


def test_issue_pages_link_to_a_stored_https_url() -> None:
    url = "https://github.com/o/r/pull/9"
    assert IssueFactory(html_url=url).github_url == url
