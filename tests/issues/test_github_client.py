"""The GitHub client against the local fake server: pagination, waits, retries, errors."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from annotator.issues.github import (
    AuthenticationError,
    GitHubClient,
    GitHubError,
    NotFoundError,
    RateLimitError,
    UnavailableError,
    parse_links,
)
from tests.issues.fake_github import FakeGitHub


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    server = FakeGitHub().start()
    server.populate(issues=250, comments=30)
    yield server
    server.stop()


def client_for(server: FakeGitHub, sleeps: list[float] | None = None, **options) -> GitHubClient:
    recorded = sleeps if sleeps is not None else []
    return GitHubClient(api_url=server.url, sleep=recorded.append, **options)


def test_the_client_imports_no_django():
    code = "import sys, annotator.issues.github; print('django' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_parse_links_reads_githubs_link_header():
    header = '<https://api.github.com/r?page=2>; rel="next", <https://api.github.com/r?page=5>; rel="last"'
    assert parse_links(header) == {
        "next": "https://api.github.com/r?page=2",
        "last": "https://api.github.com/r?page=5",
    }
    assert parse_links("") == {}


def test_following_next_links_reads_every_issue_once(github):
    client = client_for(github)
    url, numbers = client.issues_url(github.full_name), []
    while url:
        page = client.get(url)
        numbers += [issue["number"] for issue in page.data]
        url = page.links.get("next", "")
    assert numbers == list(range(1, 251))
    assert [s.query["page"] for s in github.requests_to("/issues")[1:]] == ["2", "3"]
    assert github.requests_to("/issues")[0].query == {
        "state": "all",
        "sort": "created",
        "direction": "asc",
        "per_page": "100",
    }


def test_response_carries_etag_links_and_server_time(github):
    page = client_for(github).get(client_for(github).issues_url(github.full_name))
    assert page.status == 200 and page.etag.startswith('W/"')
    assert set(page.links) == {"next", "last", "first"}
    assert page.server_time is not None and page.rate_remaining is not None


def test_etag_answers_304_when_nothing_changed(github):
    client = client_for(github)
    url = client.issues_url(github.full_name)
    first = client.get(url)
    again = client.get(url, etag=first.etag)
    assert again.not_modified and again.data is None
    github.edit_issue(5, title="edited")
    assert client.get(url, etag=first.etag).status == 200


def test_since_asks_only_for_what_changed(github):
    from datetime import UTC, datetime

    github.edit_issue(7, title="edited")
    client = client_for(github)
    page = client.get(client.issues_url(github.full_name, since=datetime(2024, 1, 1, tzinfo=UTC)))
    assert [issue["number"] for issue in page.data] == [7]
    assert github.requests_to("/issues")[0].query["since"] == "2024-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("kind", "expected_wait"),
    [("secondary", 1.0), ("429", 1.0)],
)
def test_retry_after_is_honoured(github, kind, expected_wait):
    github.fail(kind, path="/issues")
    sleeps: list[float] = []
    waits = []
    client = client_for(github, sleeps, on_wait=waits.append)
    page = client.get(client.issues_url(github.full_name))
    assert len(page.data) == 100
    assert sleeps == [expected_wait]
    assert "secondary rate limit" in waits[0].reason


def test_primary_limit_waits_until_the_reset(github):
    github.fail("primary", path="/issues")
    sleeps: list[float] = []
    client = client_for(github, sleeps, backoff=0.5)
    client.get(client.issues_url(github.full_name))
    assert len(sleeps) == 1 and 1.5 <= sleeps[0] <= 3.5  # reset 1 s away, + 1 s, + backoff


def test_a_used_up_quota_makes_the_next_request_wait(github):
    github.fail("exhaust", path="/issues")
    sleeps: list[float] = []
    client = client_for(github, sleeps, backoff=0.5)
    first = client.get(client.issues_url(github.full_name))
    assert sleeps == [] and first.rate_remaining == 0
    client.get(first.links["next"])
    assert len(sleeps) == 1 and sleeps[0] >= 1.5
    assert len(github.requests_to("/issues")) == 2  # no refused request was spent


def test_a_403_that_is_no_rate_limit_stops_with_githubs_message(github):
    github.fail("forbidden", path="/issues")  # a 403 that is not a rate limit
    with pytest.raises(GitHubError, match=r"403 .*Resource not accessible"):
        client_for(github).get(client_for(github).issues_url(github.full_name))


@pytest.mark.parametrize("kind", ["502", "500", "drop"])
def test_transient_failures_are_retried_with_backoff(github, kind):
    github.fail(kind, path="/issues", times=2)
    sleeps: list[float] = []
    client = client_for(github, sleeps, backoff=0.25)
    page = client.get(client.issues_url(github.full_name))
    assert len(page.data) == 100
    assert sleeps == [0.25, 0.5]


def test_failures_beyond_the_retries_stop_with_a_clear_error(github):
    github.fail("502", path="/issues", times=10)
    client = client_for(github, max_retries=3)
    with pytest.raises(UnavailableError, match=r"after 4 attempts .*HTTP 502"):
        client.get(client.issues_url(github.full_name))


def test_a_wait_longer_than_allowed_stops_instead(github):
    github.fail("secondary", path="/issues")
    client = client_for(github, max_wait=0.5)
    with pytest.raises(RateLimitError, match="run the sync again later"):
        client.get(client.issues_url(github.full_name))


def test_bad_token_is_a_401_naming_github_token(github):
    github.token = "right"
    client = client_for(github, token="wrong")
    with pytest.raises(AuthenticationError, match="GITHUB_TOKEN"):
        client.get(client.repository_url(github.full_name))
    assert (
        client_for(github, token="right").get(client.repository_url(github.full_name)).status == 200
    )


def test_unknown_repository_is_a_404_naming_owner_name(github):
    client = client_for(github)
    with pytest.raises(NotFoundError, match="check OWNER/NAME"):
        client.get(client.repository_url("nobody/nothing"))


def test_a_renamed_repository_is_followed(github):
    github.renamed_from = ("microsoft/DeepSpeed",)
    client = client_for(github)
    meta = client.get(client.repository_url("microsoft/DeepSpeed"))
    assert meta.data["full_name"] == "deepspeedai/DeepSpeed"
    assert meta.url.endswith("/repos/deepspeedai/DeepSpeed")
    assert [s.status for s in github.served] == [301, 200]


def test_the_token_is_not_sent_to_another_host():
    client = GitHubClient(api_url="https://api.github.com", token="secret")
    assert "Authorization" in client._headers("https://api.github.com/repos/a/b", "")
    assert "Authorization" not in client._headers("https://elsewhere.example/repos/a/b", "")
