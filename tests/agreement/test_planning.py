# ruff: noqa: RUF003 -- α is the notation of the statistics.
"""The planner: from an interval on n items, the items a target width needs; checked on
simulated rounds, where the interval at the planned number of items is close to the target."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse

from annotator.agreement import stats
from annotator.agreement.planning import items_for_width, plan_rows
from tests.agreement.factories import labelled_world
from tests.agreement.test_views import computed


def simulated(units: int, rng: np.random.Generator) -> np.ndarray:
    """Two annotators, 5 categories, each copying the item's true category 75% of the time."""
    truth = rng.integers(0, 5, size=units)
    table = np.empty((units, 2), dtype=int)
    for rater in range(2):
        keep = rng.random(units) < 0.75
        table[:, rater] = np.where(keep, truth, rng.integers(0, 5, size=units))
    return table


def width(table: np.ndarray) -> float:
    ci = stats.krippendorff_alpha(table, categories=range(5)).ci
    assert ci is not None
    return ci[1] - ci[0]


def test_the_planned_number_of_items_gives_about_the_target_width() -> None:
    rng = np.random.default_rng(7)
    for target in (0.2, 0.1):
        ratios = []
        for _ in range(12):
            pilot = simulated(40, rng)
            planned = items_for_width(
                40, stats.krippendorff_alpha(pilot, categories=range(5)).ci, target
            )
            assert planned is not None and planned > 40
            ratios.append(width(simulated(planned, rng)) / target)
        # one pilot of 40 items plans with its own noise; over twelve pilots the widths reached
        # centre on the target
        assert 0.85 < float(np.median(ratios)) < 1.15, ratios
        assert max(ratios) < 1.6 and min(ratios) > 0.6, ratios


def test_nothing_is_planned_without_an_interval() -> None:
    assert items_for_width(1, (0.1, 0.9), 0.1) is None
    assert items_for_width(30, None, 0.1) is None
    assert items_for_width(30, (0.5, 0.5), 0.1) is None
    assert items_for_width(30, (0.4, 0.6), 0.2) == 30
    assert items_for_width(30, (0.4, 0.6), 0.1) == 120


@pytest.mark.django_db
def test_the_report_plans_each_facet_from_its_interval(client) -> None:
    world = labelled_world(items=12, annotators=2)
    run = computed(world, round=world.round)
    client.force_login(world.owner)
    html = client.get(reverse("agreement:run", args=[run.pk])).content.decode()
    assert "data-plan" in html
    for row in plan_rows(run.result["facets"]):
        facet = run.facet_result(str(row["key"]))
        assert facet is not None
        headline = facet["coefficients"][facet["headline"]]
        for target, items in row["needed"]:  # type: ignore[attr-defined]
            assert items == items_for_width(headline["n_pairable_units"], headline["ci"], target)
        assert f'data-plan-facet="{row["key"]}"' in html
