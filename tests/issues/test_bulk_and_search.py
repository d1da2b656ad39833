"""The COPY-based issue upsert and the search index filled in after each write."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.issues.bulk import upsert_issue_rows
from annotator.issues.models import Issue
from annotator.issues.search import index_pending_issues, pending_issue_count
from tests.factories import IssueFactory
from tests.issues.test_import_service import rest_issue, run

pytestmark = pytest.mark.django_db

AWKWARD = 'tab\there\\back\\slash\r\nCRLF\nnewline "quotes" \\N not null 中文 🔥 \\\\t'


def test_awkward_text_survives_the_copy_exactly():
    record = rest_issue(1, title=AWKWARD, body=AWKWARD, labels=[{"name": AWKWARD}])

    run([record])

    issue = Issue.objects.get()
    assert issue.title == AWKWARD
    assert issue.body == AWKWARD.replace("\r\n", "\n")
    assert issue.labels == [AWKWARD]
    assert issue.raw == record


def comment(number: int, body: str, comment_id: int = 1) -> dict:
    return {
        "id": comment_id,
        "issue_url": f"https://api.github.com/repos/hpcaitech/ColossalAI/issues/{number}",
        "user": {"login": "a"},
        "body": body,
        "created_at": "2023-01-05T00:00:00Z",
    }


def test_reimporting_an_issue_keeps_the_count_of_its_stored_comments():
    run([rest_issue(1, comments=0)])
    run([comment(1, f"comment {n}", comment_id=n) for n in range(3)])

    run([rest_issue(1, comments=1, title="edited")])

    issue = Issue.objects.get()
    assert (issue.title, issue.comments_count) == ("edited", 3)


def test_import_leaves_nothing_to_index():
    run([rest_issue(n) for n in range(1, 51)])

    assert pending_issue_count() == 0
    assert Issue.objects.filter(search_vector__isnull=True).count() == 0


def test_an_import_is_searchable_when_it_commits_with_nothing_left_to_index():
    log = "\n".join([*["NCCL INFO Channel 05/32 : 7 -> 5 via P2P/IPC/read"] * 40, "unhandled"])
    body = f"Hangs in all-reduce on 64 ranks.\n```\n{log}\n```"

    run([rest_issue(1, body=body), rest_issue(2, title="Pipeline stalls")], index_for_search=False)

    assert pending_issue_count() == 0
    assert [issue.number for issue in Issue.objects.search("all-reduce")] == [1]
    assert [issue.number for issue in Issue.objects.search("unhandled")] == [1]  # a log's end
    assert [issue.number for issue in Issue.objects.search("64 ranks")] == [1]
    assert [issue.number for issue in Issue.objects.search("pipeline stall")] == [2]


def test_a_reimported_issue_is_searchable_by_its_new_text_and_its_stored_comments():
    run([rest_issue(1, body="zero redundancy optimizer")])
    run([comment(1, "Gradient checkpointing avoids it")])

    run([rest_issue(1, body="tensor parallel deadlock")], index_for_search=False)

    assert pending_issue_count() == 0
    assert not Issue.objects.search("redundancy").exists()
    assert Issue.objects.search("deadlock").count() == 1
    assert Issue.objects.search("checkpointing").count() == 1


def test_issues_without_a_vector_are_searchable_after_index_pending_issues():
    run([rest_issue(1, body="pipeline parallel hang"), rest_issue(2)])
    Issue.objects.update(search_vector=None)  # stored before the index, or comments changed
    assert pending_issue_count() == 2
    assert not Issue.objects.search("pipeline").exists()

    done = index_pending_issues(batch_size=1)

    assert done == 2
    assert [issue.number for issue in Issue.objects.search("pipeline")] == [1]
    assert index_pending_issues() == 0


def test_changed_issue_is_reindexed_with_its_new_text():
    run([rest_issue(1, body="zero redundancy optimizer")])
    run([rest_issue(1, body="tensor parallel deadlock")])

    assert not Issue.objects.search("redundancy").exists()
    assert Issue.objects.search("deadlock").count() == 1


def test_search_page_says_how_many_issues_are_not_yet_searchable(logged_in_client):
    IssueFactory(title="indexed later")

    response = logged_in_client.get(reverse("issues:list"), {"q": "anything"})

    assert (
        "1 recently imported issue is still being indexed for search" in response.content.decode()
    )


@pytest.mark.django_db(transaction=True)
def test_upsert_outside_a_transaction_is_refused():
    row = (1, 1, None, "t", "", "open", "", [], "", None, None, None, False, "", 0, {}, "h")

    with pytest.raises(RuntimeError, match=r"inside transaction\.atomic"):
        upsert_issue_rows([row])
