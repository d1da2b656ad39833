"""Reading the simulation's inputs with the importer's parser: every import format, comments
joined to their issue, renamed and differently cased repositories, duplicates."""

from __future__ import annotations

import io
import json

import pytest

from annotator.screening.corpus import InputError, read_issues, read_labels

API = "https://api.github.com/repos/{}"


def rest(repo: str, number: int, title: str, body: str = "") -> dict[str, object]:
    return {
        "url": API.format(repo) + f"/issues/{number}",
        "repository_url": API.format(repo),
        "html_url": f"https://github.com/{repo}/issues/{number}",
        "number": number,
        "title": title,
        "state": "open",
        "body": body,
    }


def source(name: str, content: object) -> tuple[str, io.BytesIO]:
    data = content if isinstance(content, str) else json.dumps(content)
    return name, io.BytesIO(data.encode("utf-8"))


def test_rest_issues_take_their_comments_from_a_comments_file_in_order() -> None:
    issues = [rest("hpcaitech/ColossalAI", 1, "Hang at barrier", "body one")]
    comments = [
        {"issue_url": API.format("hpcaitech/ColossalAI") + "/issues/1", "body": "first"},
        {"issue_url": API.format("hpcaitech/ColossalAI") + "/issues/1", "body": "second"},
        {"issue_url": API.format("hpcaitech/ColossalAI") + "/issues/99", "body": "orphan"},
    ]
    corpus = read_issues([source("issues.json", issues), source("comments.json", comments)])
    assert corpus.names == ["hpcaitech/ColossalAI#1"]
    assert corpus.texts == ["Hang at barrier\n\nbody one\n\nfirst\n\nsecond"]
    assert corpus.orphan_comments == 1


def test_gh_issues_bring_their_own_comments() -> None:
    gh = [
        {
            "number": 7,
            "title": "NCCL timeout",
            "body": "stuck",
            "state": "OPEN",
            "url": "https://github.com/deepspeedai/DeepSpeed/issues/7",
            "author": {"login": "a"},
            "comments": [{"author": {"login": "b"}, "body": "same on 8 nodes"}],
        }
    ]
    corpus = read_issues([source("gh.json", gh)])
    assert corpus.texts == ["NCCL timeout\n\nstuck\n\nsame on 8 nodes"]


def test_csv_and_jsonl_issue_files_are_read_as_the_import_reads_them() -> None:
    csv_text = "repository,number,title,body\nowner/repo,3,Deadlock in allreduce,see log\n"
    jsonl = json.dumps(rest("owner/repo", 4, "Docs typo")) + "\n"
    corpus = read_issues([source("issues.csv", csv_text), source("more.jsonl", jsonl)])
    assert corpus.names == ["owner/repo#3", "owner/repo#4"]
    assert corpus.texts[0] == "Deadlock in allreduce\n\nsee log"


def test_a_renamed_repository_and_other_case_find_the_same_issue() -> None:
    issues = [rest("deepspeedai/DeepSpeed", 5, "Hang")]
    renames = {"microsoft/deepspeed": "deepspeedai/DeepSpeed"}
    corpus = read_issues([source("i.json", issues)], renames=renames)
    labels = read_labels(
        io.BytesIO(b"repository,number,relevant\nMicrosoft/DeepSpeed,5,1\n"),
        corpus,
        renames=renames,
    )
    assert (labels.indices, labels.labels, labels.unlabelled) == ([0], [1], 0)


def test_an_identical_duplicate_is_read_once_and_a_different_one_is_refused() -> None:
    one = rest("o/r", 1, "Hang")
    corpus = read_issues([source("a.json", [one]), source("b.json", [one])])
    assert corpus.names == ["o/r#1"]
    with pytest.raises(InputError) as caught:
        read_issues([source("a.json", [one, rest("o/r", 1, "Hang, retitled")])])
    assert str(caught.value) == (
        "a.json: record 2: o/r#1 appears twice with different content (first as record 1)"
    )


def test_a_record_without_a_repository_needs_a_default() -> None:
    csv_text = "number,title\n3,Hang\n"
    with pytest.raises(InputError) as caught:
        read_issues([source("issues.csv", csv_text)])
    assert str(caught.value) == (
        "issues.csv: record 1: field 'repository': missing: the record names no repository "
        "(give --repo OWNER/NAME)"
    )
    corpus = read_issues([source("issues.csv", csv_text)], default_repository="o/r")
    assert corpus.names == ["o/r#3"]


def test_the_importers_limits_apply() -> None:
    with pytest.raises(InputError, match=r"^big.json: file is larger than the limit"):
        read_issues([source("big.json", [rest("o/r", 1, "x" * 2000)])], limits={"max_bytes": 100})
