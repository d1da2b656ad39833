"""`manage.py simulate_screening` end to end: a real-shaped issues file, its JSON, the chart
files, and every bad-CSV message (naming the line and the field, no traceback)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "annotator" / "issues" / "demo_data"
HANG_LABELS = Path(__file__).parent / "data" / "colossalai_hangs.csv"
API = "https://api.github.com/repos/hpcaitech/ColossalAI"
WEB = "https://github.com/hpcaitech/ColossalAI"
KEYS = {
    "model", "parameters", "seed", "runs", "every", "prior", "n_issues", "n_relevant",
    "n_unlabelled", "inputs_sha256", "wss@95", "wss@100", "erf@10", "atd", "atd_records",
    "random_wss@95", "random_wss@100", "random_erf@10", "random_atd", "recall_curve",
    "random_recall_curve", "per_run",
}  # fmt: skip

HANG_TITLES = [
    "[BUG]: training hangs at the first allreduce on {n} nodes",
    "[BUG]: NCCL watchdog timeout, stuck in barrier with gemini plugin",
    "[BUG]: multi-node training is stuck after 'Launching' on rank {n}",
    "[BUG]: deadlock in collective communication with tensor parallel size {n}",
]
OTHER_TITLES = [
    "[DOC]: typo in the README install section ({n})",
    "How do I use the example tutorial for llama fine-tuning? ({n})",
    "[BUG]: pip install fails building the wheel for cuda_ext ({n})",
    "Question about the usage of the booster API ({n})",
]


def _issue(number: int, relevant: bool) -> dict[str, Any]:
    titles = HANG_TITLES if relevant else OTHER_TITLES
    if relevant:
        body = (
            "### 🐛 Describe the bug\r\nThe job hangs and never returns; NCCL timeout after "
            "1800 s.\r\n```\r\n[E ProcessGroupNCCL.cpp:828] [Rank 3] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE)\r\n```\r\n"
            "### Environment\r\ntorch 2.1, 8 x A100, NCCL 2.18"
        )
    else:
        body = (
            "### 📚 The doc issue\nThe install page links to an old wheel; `pip install "
            "colossalai` then fails.\n<details><summary>log</summary>\n\nerror: "
            "subprocess-exited-with-error\n</details>\n文档需要更新"
        )
    return {
        "url": f"{API}/issues/{number}",
        "repository_url": API,
        "html_url": f"{WEB}/issues/{number}",
        "id": 1_000_000 + number,
        "number": number,
        "title": titles[number % len(titles)].format(n=number % 16 + 2),
        "state": "closed" if number % 3 else "open",
        "labels": [{"name": "bug"}] if relevant else [{"name": "documentation"}],
        "user": {"login": f"user{number % 7}"},
        "body": body,
        "comments": 1,
        "created_at": f"2024-0{number % 9 + 1}-1{number % 9}T08:00:00Z",
    }


def _comment(number: int, relevant: bool) -> dict[str, Any]:
    text = (
        "Same here: stuck at the barrier, py-spy shows every rank waiting in allreduce."
        if relevant
        else "Fixed by installing from source, thanks."
    )
    return {
        "issue_url": f"{API}/issues/{number}",
        "id": 2_000_000 + number,
        "user": {"login": "maintainer"},
        "body": text,
        "created_at": "2024-10-01T00:00:00Z",
    }


def _relevant(number: int) -> bool:
    return number % 5 == 0  # 12 of 60


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    numbers = range(1, 61)
    issues = tmp_path / "issues.json"
    issues.write_text(json.dumps([_issue(n, _relevant(n)) for n in numbers], ensure_ascii=False))
    comments = tmp_path / "comments.json"
    comments.write_text(json.dumps([_comment(n, _relevant(n)) for n in numbers]))
    labels = tmp_path / "labels.csv"
    rows = [f"hpcaitech/ColossalAI,{n},{int(_relevant(n))}" for n in numbers]
    labels.write_text("repository,number,relevant\n" + "\n".join(rows) + "\n")
    return {"issues": issues, "comments": comments, "labels": labels, "dir": tmp_path}


def run(*args: Any) -> str:
    out = io.StringIO()
    call_command("simulate_screening", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def run_json(files: dict[str, Path], *extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        run(
            "--issues",
            files["issues"],
            "--issues",
            files["comments"],
            "--labels",
            files["labels"],
            "--json",
            *extra,
        )
    )
    return found


# --- the run ----------------------------------------------------------------------------------
def test_the_table_names_each_figure(files: dict[str, Path]) -> None:
    out = run("--issues", files["issues"], "--labels", files["labels"], "--runs", "2")
    lines = out.splitlines()
    assert lines[0] == "tfidf-svm, seed 0, 2 runs (mean), retrain every 10, prior random"
    names = [line.split("  ")[1].strip() for line in lines[1:8]]
    assert names == ["issues", "relevant", "WSS@95", "WSS@100", "ERF@10", "ATD", "random WSS@95"]
    assert lines[1].split()[-1] == "60"
    assert lines[2].split()[-1] == "12"


def test_the_json_holds_the_documented_keys(files: dict[str, Path]) -> None:
    found = run_json(files, "--runs", "3", "--seed", "4", "--every", "5")
    assert found.keys() >= KEYS
    assert (found["model"], found["seed"], found["runs"], found["every"]) == ("tfidf-svm", 4, 3, 5)
    assert found["parameters"]["every"] == 5
    assert found["parameters"]["balance"] == "double"
    assert (found["n_issues"], found["n_relevant"], found["n_unlabelled"]) == (60, 12, 0)
    curve = found["recall_curve"]
    assert len(curve) == 61
    assert curve[0] == [0, 0.0]
    assert curve[-1] == [60, 12.0]
    assert [run["seed"] for run in found["per_run"]] == [4, 5, 6]
    assert found["wss@95"] == pytest.approx(sum(r["wss@95"] for r in found["per_run"]) / 3)
    # The relevant issues share their words: the model finds them well ahead of random order.
    assert found["wss@95"] > found["random_wss@95"] + 0.3
    assert found["erf@10"] > 0


def test_the_same_seed_prints_the_same_json(files: dict[str, Path]) -> None:
    assert run_json(files, "--seed", "3") == run_json(files, "--seed", "3")


@pytest.mark.parametrize("model", ["tfidf-logreg", "random"])
def test_the_other_models_run(files: dict[str, Path], model: str) -> None:
    found = run_json(files, "--model", model)
    assert found["model"] == model
    if model == "random":
        assert found["wss@95"] == found["random_wss@95"]


def test_the_svg_chart_is_a_valid_svg_with_both_curves(files: dict[str, Path]) -> None:
    chart = files["dir"] / "recall.svg"
    run_json(files, "--chart", chart)
    root = ET.fromstring(chart.read_bytes())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    lines = root.findall("{http://www.w3.org/2000/svg}polyline")
    assert [line.findtext("{http://www.w3.org/2000/svg}title") for line in lines] == [
        "prioritised (tfidf-svm)",
        "random order",
    ]
    assert "95% recall" in chart.read_text()
    assert "12 relevant" in root.attrib["aria-label"]


def test_the_png_chart_is_a_png(files: dict[str, Path]) -> None:
    chart = files["dir"] / "recall.png"
    run_json(files, "--chart", chart)
    data = chart.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(chart) as image:
        assert image.size == (1280, 800)


def test_a_chart_of_another_type_is_refused(files: dict[str, Path]) -> None:
    with pytest.raises(CommandError, match=r"--chart .*recall.pdf: the file name must end in"):
        run_json(files, "--chart", files["dir"] / "recall.pdf")


def test_issues_without_a_label_are_left_out_and_counted(files: dict[str, Path]) -> None:
    lines = files["labels"].read_text().splitlines()
    files["labels"].write_text("\n".join(lines[:41]) + "\n")  # the first 40 issues
    found = run_json(files)
    assert (found["n_issues"], found["n_unlabelled"]) == (40, 20)
    out = run("--issues", files["issues"], "--labels", files["labels"])
    assert "(20 issues of the files have no label and were left out)" in out


def test_the_real_colossalai_threads_with_hand_labels(tmp_path: Path) -> None:
    """The demo's 36 real issues and their comments (annotator/issues/demo_data, Apache-2.0 as
    the project README says), labelled by hand: relevant = the thread reports a hang or stuck
    training (8 of 36)."""
    found = json.loads(
        run(
            "--issues",
            DEMO / "colossalai_issues.json",
            "--issues",
            DEMO / "colossalai_comments.json",
            "--labels",
            HANG_LABELS,
            "--runs",
            "5",
            "--json",
        )
    )
    assert (found["n_issues"], found["n_relevant"]) == (36, 8)
    assert found["wss@95"] > found["random_wss@95"] + 0.2
    assert found["atd"] < found["random_atd"]


# --- bad input --------------------------------------------------------------------------------
GOOD = "hpcaitech/ColossalAI,1,0\nhpcaitech/ColossalAI,5,1\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "labels.csv: file is empty"),
        (
            "repository,number,relevant\n",
            "labels.csv: no labels: the file has a header and no rows",
        ),
        (
            "repository,number\nhpcaitech/ColossalAI,1\n",
            "labels.csv: line 1: missing column 'relevant' (the header must name repository, number, relevant; found 'repository', 'number')",
        ),
        (
            "repo,number,relevant\n" + GOOD,
            "labels.csv: line 1: missing column 'repository' (the header must name repository, number, relevant; found 'repo', 'number', 'relevant')",
        ),
        (
            "repository,number,relevant,relevant\n" + GOOD,
            "labels.csv: line 1: column 'relevant' appears 2 times",
        ),
        (
            "repository,number,relevant\n" + GOOD + "hpcaitech/ColossalAI,7,yes\n",
            "labels.csv: line 4: field 'relevant': expected 1 or 0, got 'yes'",
        ),
        (
            "repository,number,relevant\n" + GOOD + "hpcaitech/ColossalAI,7,\n",
            "labels.csv: line 4: field 'relevant': expected 1 or 0, got an empty cell",
        ),
        (
            "repository,number,relevant\n" + GOOD + "hpcaitech/ColossalAI,7\n",
            "labels.csv: line 4: field 'relevant': expected 1 or 0, got an empty cell",
        ),
        (
            "repository,number,relevant\n" + GOOD + "hpcaitech/ColossalAI,seven,1\n",
            "labels.csv: line 4: field 'number': expected a positive integer, got 'seven'",
        ),
        (
            "repository,number,relevant\n" + GOOD + "hpcaitech/ColossalAI,0,1\n",
            "labels.csv: line 4: field 'number': expected a positive integer, got '0'",
        ),
        (
            "repository,number,relevant\n" + GOOD + "ColossalAI,7,1\n",
            "labels.csv: line 4: field 'repository': expected owner/name, got 'ColossalAI'",
        ),
        (
            "repository,number,relevant\n" + GOOD + "hpcaitech/ColossalAI,9999,1\n",
            "labels.csv: line 4: fields 'repository', 'number': hpcaitech/ColossalAI#9999 is not in the issues file(s)",
        ),
        (
            "repository,number,relevant\n" + GOOD + "microsoft/DeepSpeed,7,1\n",
            "labels.csv: line 4: fields 'repository', 'number': microsoft/DeepSpeed#7 is not in the issues file(s)",
        ),
        (
            "repository,number,relevant\n" + GOOD + "hpcaitech/colossalai,1,1\n",
            "labels.csv: line 4: hpcaitech/ColossalAI#1 is labelled twice (first on line 2)",
        ),
        (
            "repository,number,relevant\n" + GOOD + "\n" + "hpcaitech/ColossalAI,5,1\n",
            "labels.csv: line 5: hpcaitech/ColossalAI#5 is labelled twice (first on line 3)",
        ),
        (
            'repository,number,relevant\n"hpcaitech/ColossalAI,1,0\n',
            "labels.csv: line 2: not valid CSV (unexpected end of data)",
        ),
        (
            "repository,number,relevant\nhpcaitech/ColossalAI,1,0\nhpcaitech/ColossalAI,2,0\n",
            "labels.csv: the labels need at least one relevant and one irrelevant issue",
        ),
    ],
)
def test_a_bad_labels_csv_names_the_line_and_the_field(
    files: dict[str, Path], text: str, message: str
) -> None:
    files["labels"].write_text(text)
    chart = files["dir"] / "never.svg"
    with pytest.raises(CommandError) as caught:
        run("--issues", files["issues"], "--labels", files["labels"], "--chart", chart)
    assert str(caught.value).removesuffix("; nothing was simulated") == message
    assert not chart.exists()


def test_a_labels_csv_that_is_not_utf8_is_refused(files: dict[str, Path]) -> None:
    files["labels"].write_bytes(b"repository,number,relevant\nhpcaitech/Colossal\xe9AI,1,1\n")
    with pytest.raises(CommandError, match=r"^labels.csv: not valid UTF-8"):
        run("--issues", files["issues"], "--labels", files["labels"])


def test_a_bom_and_other_columns_and_header_case_are_accepted(files: dict[str, Path]) -> None:
    text = "\ufeffNote,Relevant,Number,Repository\n" + "\n".join(
        f"n{n},{int(_relevant(n))},{n},HPCAITECH/ColossalAI" for n in range(1, 61)
    )
    files["labels"].write_text(text)
    assert run_json(files)["n_relevant"] == 12


def test_a_bad_issues_file_names_the_record_and_the_field(files: dict[str, Path]) -> None:
    issues = json.loads(files["issues"].read_text())
    del issues[1]["title"]
    files["issues"].write_text(json.dumps(issues))
    with pytest.raises(CommandError) as caught:
        run("--issues", files["issues"], "--labels", files["labels"])
    assert str(caught.value) == (
        "issues.json: record 2 (number 2): field 'title': missing; nothing was simulated"
    )


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--runs", "0", "--runs must be at least 1, got 0"),
        ("--every", "0", "--every must be at least 1, got 0"),
        ("--seed", "-1", "--seed must be 0 or more, got -1"),
    ],
)
def test_bad_options_are_refused(
    files: dict[str, Path], option: str, value: str, message: str
) -> None:
    with pytest.raises(CommandError, match=f"^{message}$"):
        run("--issues", files["issues"], "--labels", files["labels"], option, value)


def test_a_missing_file_is_named(files: dict[str, Path]) -> None:
    missing = files["dir"] / "nope.json"
    with pytest.raises(CommandError, match=f"^{missing}: no such file$"):
        run("--issues", missing, "--labels", files["labels"])


def test_from_the_shell_a_bad_csv_is_one_line_and_exit_1_without_traceback(
    files: dict[str, Path],
) -> None:
    files["labels"].write_text("repository,number,relevant\nhpcaitech/ColossalAI,3,maybe\n")
    done = subprocess.run(
        [sys.executable, "manage.py", "simulate_screening", "--issues", str(files["issues"]),
         "--labels", str(files["labels"])],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert (
        "CommandError: labels.csv: line 2: field 'relevant': expected 1 or 0, got 'maybe'; "
        "nothing was simulated"
    ) in done.stderr
    assert done.stdout == ""
