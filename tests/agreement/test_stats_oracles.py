# ruff: noqa: RUF002, RUF003 -- the notation of the sources (α, κ, ×, −).
"""Reference packages as oracles on random data, missing ratings included.

They agree to 1e-9 where the conventions match. Where a package's convention differs, the test
states the difference and checks it, so the reason two numbers differ is on record:

- krippendorff.alpha takes raters × units and defaults to the INTERVAL level;
- irrCAC lets single-rated units into Fleiss'/AC1 marginals (we drop them: population rule);
- sklearn's weighted κ ranks the labels present unless `labels=` gives the declared scale;
- statsmodels' fleiss_kappa needs the same number of ratings per unit (complete tables only);
- nltk's masi_distance rounds Passonneau's monotonicity weights 2/3, 1/3 to 0.67, 0.33.

irrCAC is not in the lock file (it pins scipy==1.12.0 and pandas<3); its tests run only where
it is installed, e.g. a scratch venv: `pip install irrCAC pytest` then
`PYTHONPATH=. pytest --noconftest -p no:django tests/agreement/test_stats_oracles.py -k irrcac`.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from annotator.agreement import stats

krippendorff = pytest.importorskip("krippendorff")
TOL = 1e-9
SEEDS = range(12)


def _random_table(seed: int, units: int = 80, raters: int = 4, q: int = 5, missing: float = 0.3):
    """Correlated ratings 1..q with a share missing; NaN = missing."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, q + 1, units)
    noise = rng.integers(1, q + 1, (units, raters))
    table = np.where(rng.random((units, raters)) < 0.6, truth[:, None], noise).astype(float)
    table[rng.random(table.shape) < missing] = np.nan
    return table


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", SEEDS)
def test_alpha_matches_krippendorff_package(seed, level):  # type: ignore[no-untyped-def]
    table = _random_table(seed)
    ours = stats.krippendorff_alpha(table, level=level).value
    theirs = krippendorff.alpha(reliability_data=table.T, level_of_measurement=level)
    assert ours == pytest.approx(theirs, abs=TOL)


def test_krippendorff_package_defaults_to_interval_and_raters_by_units():
    table = _random_table(99)
    default = krippendorff.alpha(reliability_data=table.T)
    assert default == pytest.approx(
        stats.krippendorff_alpha(table, level="interval").value, abs=TOL
    )
    assert default != pytest.approx(stats.krippendorff_alpha(table).value, abs=1e-3)


@pytest.mark.parametrize("seed", SEEDS)
def test_alpha_matches_nltk_including_set_distances(seed):  # type: ignore[no-untyped-def]
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import binary_distance

    table = _random_table(seed, units=40, raters=3)
    triples = [
        (str(r), str(u), int(v)) for u, row in enumerate(table) for r, v in enumerate(row) if v == v
    ]
    nltk_alpha = AnnotationTask(data=triples, distance=binary_distance).alpha()
    assert stats.krippendorff_alpha(table).value == pytest.approx(nltk_alpha, abs=TOL)

    sets = _random_sets(seed)
    triples = [
        (str(r), str(u), v)
        for u, row in enumerate(sets)
        for r, v in enumerate(row)
        if v is not None
    ]
    for ours, name in ((stats.masi_distance, "masi"), (stats.jaccard_distance, "jaccard")):
        expected = AnnotationTask(data=triples, distance=ours).alpha()
        assert stats.krippendorff_alpha(sets, distance=name).value == pytest.approx(
            expected, abs=TOL
        )


def _random_sets(seed: int, units: int = 40, raters: int = 3):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    labels = "abcdef"

    def draw() -> frozenset[str]:
        return frozenset(lab for lab in labels if rng.random() < 0.3)

    rows = []
    for _ in range(units):
        base = draw()
        rows.append(
            [
                None if rng.random() < 0.2 else (base if rng.random() < 0.6 else draw())
                for _ in range(raters)
            ]
        )
    return rows


def test_masi_differs_from_nltk_only_by_the_rounded_weights():
    from nltk.metrics.distance import masi_distance as nltk_masi

    labels = "abcd"
    subsets = [frozenset(c) for n in range(1, 5) for c in itertools.combinations(labels, n)]
    for a, b in itertools.product(subsets, repeat=2):
        jaccard = len(a & b) / len(a | b)
        rounded = {0.67: 2 / 3, 0.33: 1 / 3}
        nltk_m = (1 - nltk_masi(a, b)) / jaccard if jaccard else 0.0
        exact_m = rounded.get(round(nltk_m, 2), nltk_m)
        assert stats.masi_distance(a, b) == pytest.approx(1 - jaccard * exact_m, abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_matches_statsmodels_on_complete_tables(seed):  # type: ignore[no-untyped-def]
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    table = _random_table(seed, raters=5, missing=0.0).astype(int)
    counts, _ = aggregate_raters(table)
    assert stats.fleiss_kappa(table).value == pytest.approx(fleiss_kappa(counts), abs=TOL)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", SEEDS)
def test_cohen_matches_sklearn_and_statsmodels_on_the_declared_scale(seed, weights):  # type: ignore[no-untyped-def]
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import cohens_kappa

    declared = [1, 2, 3, 4, 5, 6, 7]  # 6 and 7 never used: the scale still counts them
    table = _random_table(seed, raters=2)
    ours = stats.cohen_kappa(table, categories=declared, weights=weights).value
    both = table[~np.isnan(table).any(axis=1)].astype(int)
    sk = cohen_kappa_score(both[:, 0], both[:, 1], labels=declared, weights=weights)
    assert ours == pytest.approx(sk, abs=TOL)
    crosstab = np.zeros((7, 7))
    np.add.at(crosstab, (both[:, 0] - 1, both[:, 1] - 1), 1)
    sm = cohens_kappa(
        crosstab, wt={None: None, "linear": "linear", "quadratic": "quadratic"}[weights]
    )
    assert ours == pytest.approx(sm.kappa, abs=TOL)


def test_sklearn_without_labels_ranks_the_labels_present():
    from sklearn.metrics import cohen_kappa_score

    table = _random_table(5, raters=2, q=4)
    both = table[~np.isnan(table).any(axis=1)].astype(int)
    present = sorted(set(both.ravel()))
    ranked = cohen_kappa_score(both[:, 0], both[:, 1], weights="quadratic")
    assert stats.cohen_kappa(table, categories=present, weights="quadratic").value == pytest.approx(
        ranked, abs=TOL
    )
    # An unused level inside the scale widens the gaps around it (one at an end only rescales).
    gap = [*present[:2], 2.5, *present[2:]]
    wider = stats.cohen_kappa(table, categories=gap, weights="quadratic").value
    assert wider != pytest.approx(ranked, abs=1e-3)


@pytest.mark.parametrize("seed", SEEDS)
def test_jackknife_se_equals_brute_force_leave_one_out(seed):  # type: ignore[no-untyped-def]
    """The vectorised leave-one-unit-out algebra against refitting without each unit."""
    table = _random_table(seed, units=30)
    for coefficient, options in [
        (stats.krippendorff_alpha, {"level": "ordinal"}),
        (stats.krippendorff_alpha, {"level": "interval"}),
        (stats.fleiss_kappa, {}),
        (stats.gwet_ac1, {"categories": range(1, 8)}),
    ]:
        result = coefficient(table, **options)
        keep = np.flatnonzero((~np.isnan(table)).sum(axis=1) >= 2)
        loo = np.array(
            [coefficient(table[np.delete(keep, i)], **options).value for i in range(len(keep))]
        )
        se = np.sqrt((len(loo) - 1) / len(loo) * ((loo - loo.mean()) ** 2).sum())
        assert result.se == pytest.approx(se, abs=TOL)


# -- irrCAC (only where installed; see the module docstring) -------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_irrcac_fleiss_ac1_alpha_and_gwet_se_on_pairable_units(seed):  # type: ignore[no-untyped-def]
    irrcac = pytest.importorskip("irrCAC.raw")
    import pandas as pd

    table = _random_table(seed)
    declared = list(range(1, 8))
    pairable = table[(~np.isnan(table)).sum(axis=1) >= 2]
    cac = irrcac.CAC(pd.DataFrame(pairable), categories=declared, digits=15)
    ac1, fleiss, alpha = cac.gwet()["est"], cac.fleiss()["est"], cac.krippendorff()["est"]
    ours_ac1 = stats.gwet_ac1(table, categories=declared)
    ours_fleiss = stats.fleiss_kappa(table, categories=declared)
    assert ours_ac1.value == pytest.approx(ac1["coefficient_value"], abs=TOL)
    assert ours_ac1.analytic_se == pytest.approx(ac1["se"], abs=TOL)
    assert ours_fleiss.value == pytest.approx(fleiss["coefficient_value"], abs=TOL)
    assert ours_fleiss.analytic_se == pytest.approx(fleiss["se"], abs=TOL)
    assert stats.krippendorff_alpha(table).value == pytest.approx(
        alpha["coefficient_value"], abs=TOL
    )


def test_irrcac_lets_single_rated_units_into_the_marginals():
    irrcac = pytest.importorskip("irrCAC.raw")
    from irrCAC.datasets import raw_4raters

    data = raw_4raters()
    printed = irrcac.CAC(data, digits=15).gwet()["est"]["coefficient_value"]
    assert round(printed, 5) == 0.77544
    pairable_only = irrcac.CAC(data.iloc[:11], digits=15).gwet()["est"]["coefficient_value"]
    assert stats.gwet_ac1(data.to_numpy()).value == pytest.approx(pairable_only, abs=TOL)
