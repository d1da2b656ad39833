# ruff: noqa: RUF001, RUF002, RUF003 -- α, Δ and × are the notation of the statistics.
"""The agreement partitions and the substitution test against an independent computation: the
`krippendorff` package (the dev group's oracle) on a planted-agreement dataset, with the
delete-one-unit jackknife done by brute force (the oracle recomputed without each item)."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from collections import Counter
from typing import Any

import krippendorff
import numpy as np
import pytest

from annotator.agreement.partitions import MARGIN, facet_partitions, verdict
from annotator.agreement.stats import krippendorff_alpha

CODES = ["failure", "hang", "oom", "crash", "slow"]
HUMANS = ["ann1", "ann2", "ann3"]


def planted(
    units: int = 60, human_copy: float = 0.8, machine_copy: float = 0.6, seed: int = 3
) -> tuple[list[list[Any]], dict[tuple[str, int], list[Any]]]:
    """Each item has a true code; each human copies it with `human_copy`, else draws afresh;
    one in five items lacks the third human; the machine (two samples) copies with
    `machine_copy`, and leaves one item in ten unanswered."""
    rng = random.Random(seed)
    rows, m0, m1 = [], [], []
    for u in range(units):
        truth = rng.choice(CODES)
        row = [truth if rng.random() < human_copy else rng.choice(CODES) for _ in HUMANS]
        if u % 5 == 0:
            row[2] = None
        rows.append(row)
        answered = u % 10 != 7
        m0.append(
            (truth if rng.random() < machine_copy else rng.choice(CODES)) if answered else None
        )
        m1.append(
            (truth if rng.random() < machine_copy else rng.choice(CODES)) if answered else None
        )
    return rows, {("llm", 0): m0, ("llm", 1): m1}


def oracle(rows: list[list[Any]]) -> float:
    """Nominal α of a units × raters table by the `krippendorff` package (raters × units)."""
    index = {c: i for i, c in enumerate(CODES)}
    data = np.array([[np.nan if c is None else index[c] for c in row] for row in rows]).T
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def oracle_jackknife_se(statistic: Any, n: int) -> float:
    """Delete-one-unit jackknife SE of statistic(kept unit indices), by brute force."""
    full = list(range(n))
    reps = np.array([statistic([u for u in full if u != left]) for left in full])
    return float(math.sqrt((n - 1) / n * ((reps - reps.mean()) ** 2).sum()))


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    rows, machines = planted()
    return facet_partitions(
        key="symptom",
        name="Symptom",
        multilabel=False,
        categories=CODES,
        humans=rows,
        human_names=HUMANS,
        machines=machines,
    )


def test_human_human_pooled_and_machine_machine_equal_the_oracle(result):
    rows, machines = planted()
    m0, m1 = machines[("llm", 0)], machines[("llm", 1)]
    assert result["human_human"]["value"] == pytest.approx(oracle(rows), abs=1e-9)
    pooled = [[*r, a, b] for r, a, b in zip(rows, m0, m1, strict=True)]
    assert result["pooled"]["value"] == pytest.approx(oracle(pooled), abs=1e-9)
    samples = result["raters"][0]["machine_machine"]
    assert samples["value"] == pytest.approx(
        oracle([[a, b] for a, b in zip(m0, m1, strict=True)]), abs=1e-9
    )
    assert result["machine_machine"] is None  # one machine rater: no rater–rater partition


def test_the_substitution_test_equals_the_oracle_with_a_brute_force_jackknife(result):
    rows, machines = planted()
    m = machines[("llm", 0)]
    keep = [
        u for u, r in enumerate(rows) if m[u] is not None and sum(c is not None for c in r) >= 2
    ]
    sub_rows, sub_m = [rows[u] for u in keep], [m[u] for u in keep]

    def swapped(h: int, units: list[int]) -> list[list[Any]]:
        return [
            [
                sub_m[u] if c == h and cell is not None else cell
                for c, cell in enumerate(sub_rows[u])
            ]
            for u in units
        ]

    def change(units: list[int]) -> float:
        humans = oracle([sub_rows[u] for u in units])
        return float(np.mean([oracle(swapped(h, units)) for h in range(3)])) - humans

    test = result["raters"][0]["substitution"]
    everything = list(range(len(keep)))
    assert test["units"] == len(keep) == 54
    assert test["humans"]["value"] == pytest.approx(oracle(sub_rows), abs=1e-9)
    for h, replaced in enumerate(test["replaced"]):
        assert replaced["human"] == HUMANS[h]
        assert replaced["value"] == pytest.approx(oracle(swapped(h, everything)), abs=1e-9)
    assert test["difference"]["value"] == pytest.approx(change(everything), abs=1e-9)
    se = oracle_jackknife_se(change, len(keep))
    assert test["difference"]["se"] == pytest.approx(se, rel=1e-6)
    low, high = test["difference"]["ci"]
    assert low == pytest.approx(test["difference"]["value"] - 1.959964 * se, abs=1e-5)
    assert high == pytest.approx(test["difference"]["value"] + 1.959964 * se, abs=1e-5)
    human_se = oracle_jackknife_se(lambda us: oracle([sub_rows[u] for u in us]), len(keep))
    assert test["humans"]["se"] == pytest.approx(human_se, rel=1e-6)


def test_human_machine_pairs_and_their_mean_equal_the_oracle(result):
    rows, machines = planted()
    m = machines[("llm", 0)]
    keep = [
        u for u, r in enumerate(rows) if m[u] is not None and sum(c is not None for c in r) >= 2
    ]
    hm = result["raters"][0]["human_machine"]

    def pair(h: int, units: list[int]) -> float:
        return oracle(
            [[rows[keep[u]][h], m[keep[u]]] for u in units if rows[keep[u]][h] is not None]
        )

    everything = list(range(len(keep)))
    for h, row in enumerate(hm["pairs"]):
        assert row["value"] == pytest.approx(pair(h, everything), abs=1e-9)
    mean = lambda units: float(np.mean([pair(h, units) for h in range(3)]))  # noqa: E731
    assert hm["value"] == pytest.approx(mean(everything), abs=1e-9)
    assert hm["se"] == pytest.approx(oracle_jackknife_se(mean, len(keep)), rel=1e-6)


def test_the_confusion_counts_the_human_majority_against_the_machine(result):
    rows, machines = planted()
    m = machines[("llm", 0)]
    expected: Counter[tuple[str, str]] = Counter()
    no_majority = 0
    for row, said in zip(rows, m, strict=True):
        rated = [c for c in row if c is not None]
        if said is None or len(rated) < 2:
            continue
        code, n = Counter(rated).most_common(1)[0]
        if 2 * n > len(rated):
            expected[(code, said)] += 1
        else:
            no_majority += 1
    confusion = result["raters"][0]["confusion"]
    got = {
        (CODES[i], CODES[j]): n
        for i, line in enumerate(confusion["cells"])
        for j, n in enumerate(line)
        if n
    }
    assert got == dict(expected) and confusion["no_majority"] == no_majority
    hang = next(r for r in confusion["per_category"] if r["code"] == "hang")
    human_hang = sum(n for (h, _), n in expected.items() if h == "hang")
    assert hang["human_majority"] == human_hang
    assert hang["recall"] == pytest.approx(expected[("hang", "hang")] / human_hang)


def test_a_machine_that_copies_the_truth_less_often_cannot_replace_a_human():
    rows, machines = planted(units=200, human_copy=0.9, machine_copy=0.3, seed=5)
    result = facet_partitions(
        key="symptom", name="Symptom", multilabel=False, categories=CODES,
        humans=rows, human_names=HUMANS, machines={("llm", 0): machines[("llm", 0)]},
    )  # fmt: skip
    sentence = result["raters"][0]["substitution"]["verdict"]
    assert sentence.startswith("Symptom: replacing one human annotator by llm changes")
    assert "it could not replace a human annotator" in sentence


def test_a_machine_as_good_as_the_humans_passes_the_substitution_test():
    rows, machines = planted(units=400, human_copy=0.8, machine_copy=0.8, seed=11)
    result = facet_partitions(
        key="symptom", name="Symptom", multilabel=False, categories=CODES,
        humans=rows, human_names=HUMANS, machines={("llm", 0): machines[("llm", 0)]},
    )  # fmt: skip
    test = result["raters"][0]["substitution"]
    low, high = test["difference"]["ci"]
    assert -MARGIN <= low < 0 < high
    assert "by this test the model could replace a human annotator" in test["verdict"]


def test_a_wide_interval_around_no_change_is_inconclusive_not_a_pass():
    rows, machines = planted(units=15, human_copy=0.8, machine_copy=0.8, seed=9)
    result = facet_partitions(
        key="symptom", name="Symptom", multilabel=False, categories=CODES,
        humans=rows, human_names=HUMANS, machines={("llm", 0): machines[("llm", 0)]},
    )  # fmt: skip
    test = result["raters"][0]["substitution"]
    low, high = test["difference"]["ci"]
    assert low < -MARGIN and high > 0
    assert f"the interval still allows a loss of up to {-low:.3f}: inconclusive" in test["verdict"]
    assert "could replace" not in test["verdict"]


def test_an_undefined_human_alpha_is_said_not_read():
    rows = [["hang", "hang"]] * 4  # no variation among the humans: α undefined
    result = facet_partitions(
        key="symptom", name="Symptom", multilabel=False, categories=CODES,
        humans=rows, human_names=["x", "y"], machines={("llm", 0): ["hang", "oom", "hang", "hang"]},
    )  # fmt: skip
    test = result["raters"][0]["substitution"]
    assert test["humans"]["value"] is None
    assert test["verdict"] == verdict(test, rater="llm", facet="Symptom")
    assert test["verdict"].startswith("Symptom: α of the humans is undefined on the 4 items")
    assert "cannot be read" in test["verdict"]


def test_label_sets_use_masi_alpha_and_count_per_label():
    rows = [[frozenset({"a"}), frozenset({"a", "b"})], [frozenset({"b"}), frozenset({"b"})]] * 5
    machine = [frozenset({"a"}), frozenset({"a"})] * 5
    result = facet_partitions(
        key="fix", name="Fix", multilabel=True, categories=["a", "b"],
        humans=rows, human_names=["x", "y"], machines={("llm", 0): machine},
    )  # fmt: skip
    assert result["coefficient"] == "krippendorff_alpha_masi"
    per_label = {r["code"]: r for r in result["raters"][0]["confusion"]["per_category"]}
    # label a: both humans chose it on the first kind of item; b: both only on the second
    assert per_label["a"]["human_majority"] == 5 and per_label["a"]["machine"] == 10
    assert per_label["b"]["human_majority"] == 5 and per_label["b"]["both"] == 0


@pytest.mark.parametrize("multilabel", [False, True])
def test_coded_tables_give_the_figures_of_the_cells_to_the_last_bit(multilabel):
    """The partitions code the cells once against a Scale and slice integer arrays; each table
    must be the one `encode_table` makes of the same cells (label sets in its order, which is
    not the declared one here), so every figure is equal, not merely close."""
    rng = random.Random(7)
    if multilabel:
        cells: list[Any] = [
            frozenset(s) for s in (["b"], ["a"], ["c", "a"], ["b", "c"], ["a", "b", "c"])
        ]
        categories, distance = ["c", "b", "a"], "masi"
    else:
        cells, categories, distance = list(CODES), list(CODES), None
    rows = [[rng.choice([*cells, None]) for _ in HUMANS] for _ in range(80)]
    machine = [rng.choice([*cells[1:], None]) for _ in range(80)]
    result = facet_partitions(
        key="f", name="F", multilabel=multilabel, categories=categories,
        humans=rows, human_names=HUMANS, machines={("llm", 0): machine},
    )  # fmt: skip

    def figures(table: list[list[Any]]) -> tuple[Any, ...]:
        found = krippendorff_alpha(table, categories=None if multilabel else categories,
                                   distance=distance)  # fmt: skip
        return found.value, found.se, list(found.ci) if found.ci else None

    def stored(alpha: dict[str, Any]) -> tuple[Any, ...]:
        return alpha["value"], alpha["se"], alpha["ci"]

    assert stored(result["human_human"]) == figures(rows)
    pooled = [[*row, said] for row, said in zip(rows, machine, strict=True)]
    assert stored(result["pooled"]) == figures(pooled)
    keep = [u for u, row in enumerate(rows) if machine[u] is not None and sum(
        c is not None for c in row) >= 2]  # fmt: skip
    test = result["raters"][0]["substitution"]
    assert stored(test["humans"]) == figures([rows[u] for u in keep])
    for h, replaced in enumerate(test["replaced"]):
        swapped = [[machine[u] if c == h and cell is not None else cell
                    for c, cell in enumerate(rows[u])] for u in keep]  # fmt: skip
        assert stored(replaced) == figures(swapped)


def test_the_partitions_core_imports_no_django():
    code = "import sys, annotator.agreement.partitions; print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
