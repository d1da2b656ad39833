"""The pure near-duplicate and similar-issue cores (no Django, no database)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from annotator.similarity.duplicates import (
    DuplicateIndex,
    Pair,
    Params,
    error_signature,
    find_duplicates,
    group_pairs,
    normalise,
)
from annotator.similarity.similar import SimilarIndex, SimilarParams

ROOT = Path(__file__).resolve().parents[2]

REPORT = """ZeRO-3 hangs in all_reduce after the first optimizer step

{when} INFO [rank{rank}] pid={pid} starting step 1 on {host}
Traceback (most recent call last):
  File "{home}/site-packages/deepspeed/runtime/engine.py", line {line}, in step
  File "{home}/site-packages/torch/distributed/distributed_c10d.py", line 2050, in all_reduce
RuntimeError: NCCL error in: {home}/nccl/ProcessGroupNCCL.cpp:{line}, unhandled system error, tensor at {addr}

I train a 7B model on two nodes of eight GPUs with ZeRO stage 3 and overlap_comm enabled.
The first step finishes, then every rank waits in all_reduce until the NCCL watchdog fires.
"""


def report(**changes: str) -> str:
    values = {
        "when": "2024-05-01 12:00:01,123",
        "rank": "3",
        "pid": "12345",
        "host": "10.0.0.12:29500",
        "home": "/home/alice/venv/lib/python3.10",
        "line": "1234",
        "addr": "0x7f3a2b10",
    }
    return REPORT.format(**(values | changes))


def respaced(text: str) -> str:
    return text.replace(" ", "   ").replace("\n", "\n\n \t")


OTHERS = [
    "How do I set a cosine learning rate schedule in the config file? The documentation lists "
    "warmup_min_lr and warmup_max_lr but nothing about cosine decay over the whole run.",
    "Checkpoint loading fails with a key mismatch after converting a Megatron checkpoint to the "
    "universal format: KeyError: 'optimizer_state_dict' when resuming on a different world size.",
    "Feature request: support FP8 training with Transformer Engine on H100 and report the "
    "throughput next to bf16 in the benchmark table of the README.",
]


def test_normalise_folds_timestamps_paths_ranks_pids_addresses_numbers_and_whitespace():
    one = report()
    two = respaced(
        report(
            when="2025-01-09T03:14:15.9Z",
            rank="7",
            pid="99",
            host="192.168.1.4:6000",
            home="C:\\Users\\bob\\miniconda3\\envs\\ds\\lib",
            line="77",
            addr="0xdeadbeef",
        )
    )
    assert normalise(one) == normalise(two)
    assert "<path>" in normalise(one) and "<ts>" in normalise(one) and "<hex>" in normalise(one)


def test_words_with_digits_stay_words():
    assert normalise("fp16 w2v python3.10 ZeRO-3 rank 4 [rank7]:") == (
        "fp16 w2v python3.10 zero-3 rank <n> [rank<n>]:"
    )


def test_error_signature_is_exception_message_and_frames():
    signature = error_signature(report())
    assert signature is not None
    assert signature.exception == "RuntimeError"
    assert signature.frames == ("step", "all_reduce")
    assert "<path>" in signature.message and "<hex>" in signature.message
    assert signature.key == error_signature(respaced(report(home="/opt/conda/lib"))).key
    assert error_signature("No traceback here, only words.") is None


def test_issues_differing_in_whitespace_timestamps_and_paths_are_grouped():
    texts = [
        report(),
        respaced(report(when="2023-11-30 23:59:59", home="/opt/conda/lib/python3.8")),
        report(home="/data/users/carol/.local/lib/python3.11", rank="0", pid="7"),
        *OTHERS,
    ]
    groups = find_duplicates(enumerate(texts, start=100))
    assert [g.members for g in groups] == [[100, 101, 102]]
    assert all(p.similarity >= 0.9 and p.same_signature for p in groups[0].pairs)
    assert len(groups[0].pairs) == 3


def test_distinct_issues_are_not_grouped_even_with_the_same_exception():
    oom = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB"
    texts = [
        f"Training a 13B model with ZeRO-2 on 8 A100s runs out of memory at step 40.\n{oom}",
        f"Inference with the kernel injection of a BLOOM checkpoint fails on one V100.\n{oom}",
        *OTHERS,
    ]
    assert find_duplicates(enumerate(texts)) == []


def test_a_shared_traceback_signature_pairs_issues_whose_prose_differs():
    first = report()
    second = report().split("\n\n")[1] + "\n\nSame here on 4 nodes, it hangs as well."
    pairs = DuplicateIndex().add(1, first) + DuplicateIndex().add(2, second)
    assert pairs == []  # separate indexes: nothing to compare
    index = DuplicateIndex()
    index.add(1, first)
    found = index.add(2, second)
    assert len(found) == 1 and found[0].same_signature and found[0].a == 1
    assert found[0].similarity < Params().threshold  # the text alone would not have paired them


def test_groups_are_connected_components_with_their_pairs():
    pairs = [Pair(1, 2, 0.9, False), Pair(2, 3, 0.8, False), Pair(7, 8, 0.95, True)]
    groups = group_pairs(pairs)
    assert [g.members for g in groups] == [[7, 8], [1, 2, 3]]
    assert groups[1].max_similarity == 0.9 and groups[1].min_similarity == 0.8


TEMPLATE = (
    "Describe the bug: training stops when the job is launched with the launcher on a cluster "
    "of many nodes and the loss is never printed, the logs stay quiet and nothing moves again. "
    "To reproduce: run the example script with the default configuration file and wait for "
    "the first step. Expected behavior: the first step finishes and the loss is printed. "
    "Reported by {who} on the {where} cluster."
)
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vi", "do", "pa", "ge", "ho"]


def _word(n: int) -> str:
    return "".join(SYLLABLES[(n // 12**k) % 12] for k in range(3))


def _template_pool(size: int) -> list[str]:
    """A template filed `size` times, each copy naming its own reporter and cluster."""
    return [TEMPLATE.format(who=_word(n), where=_word(n + 500)) for n in range(size)]


UNBOUNDED = Params(bucket_size=10**9, pairs_per_issue=10**9)


def test_a_template_filed_hundreds_of_times_is_one_group_without_a_pair_for_every_two():
    pool = _template_pool(300)

    bounded, unbounded = DuplicateIndex(), DuplicateIndex(UNBOUNDED)
    found = [pair for n, text in enumerate(pool) for pair in bounded.add(n, text)]
    every = [pair for n, text in enumerate(pool) for pair in unbounded.add(n, text)]

    assert len(every) > 20_000  # unbounded: nearly every two of the 300 (44,850 pairs)
    assert len(found) <= 300 * Params().pairs_per_issue
    assert max(len(b) for table in bounded._buckets for b in table.values()) == 10
    groups = group_pairs(found)
    assert [g.members for g in groups] == [g.members for g in group_pairs(every)]
    assert len(groups) == 1 and len(groups[0].members) >= 290  # a few copies are not alike enough


def test_an_issue_keeps_its_most_similar_pairs():
    pool = _template_pool(60)
    kept = DuplicateIndex(Params(pairs_per_issue=3, bucket_size=UNBOUNDED.bucket_size))
    every = DuplicateIndex(UNBOUNDED)

    for n, text in enumerate(pool):
        found, all_pairs = kept.add(n, text), every.add(n, text)

        def ranked(pairs):  # type: ignore[no-untyped-def]
            return sorted(pairs, key=lambda p: (-p.similarity, p.a, p.b))

        assert ranked(found) == ranked(all_pairs)[:3]

    assert any(len(every.add(100 + n, text)) > 3 for n, text in enumerate(pool[:5]))


def test_bounds_change_nothing_where_no_issue_has_many_near_duplicates():
    texts = [
        report(),
        respaced(report(when="2023-11-30 23:59:59", home="/opt/conda/lib/python3.8")),
        *OTHERS,
        *_template_pool(8),
        *(f"{other} Seen again on {_word(n)}." for n, other in enumerate(OTHERS)),
    ]

    bounded, unbounded = DuplicateIndex(), DuplicateIndex(UNBOUNDED)
    found = [pair for n, text in enumerate(texts) for pair in bounded.add(n, text)]
    every = [pair for n, text in enumerate(texts) for pair in unbounded.add(n, text)]

    assert len(found) == len(every) >= 20  # the template's copies pair with each other
    assert sorted(found, key=lambda p: (p.a, p.b)) == sorted(every, key=lambda p: (p.a, p.b))


def test_similar_issues_rank_by_tfidf_cosine_and_leave_out_the_issue_itself():
    texts = [
        "nccl timeout allreduce hang zero stage three watchdog",
        "nccl watchdog timeout allreduce hang on two nodes",
        "checkpoint conversion universal format key mismatch",
        "universal checkpoint conversion fails key mismatch resume",
        "learning rate scheduler cosine warmup config",
        "tokenizer padding side warning generation",
    ] * 1
    index = SimilarIndex(SimilarParams(k=2, max_df=0.9))
    index.add(list(range(10, 16)), texts)
    found = dict(index.neighbours())
    assert found[10][0][0] == 11 and found[12][0][0] == 13
    assert all(other != key for key, near in found.items() for other, _ in near)
    assert all(0 < score <= 1.0001 for near in found.values() for _, score in near)
    scores = [score for _, score in found[10]]
    assert scores == sorted(scores, reverse=True)


def test_similar_index_of_nothing_yields_nothing():
    assert list(SimilarIndex().neighbours()) == []


@pytest.mark.parametrize(
    "modules", ["annotator.similarity.duplicates", "annotator.similarity.similar"]
)
def test_cores_import_no_django(modules):
    code = (
        f"import {modules}, sys; "
        "assert not any(m.startswith('django') for m in sys.modules), 'django loaded'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_an_empty_batch_adds_nothing():
    index = SimilarIndex()
    index.add([], [])
    index.add([1, 2], ["nccl hang allreduce", "nccl hang allreduce watchdog"])
    index.add([], [])
    assert [key for key, _ in index.neighbours()] == [1, 2]
