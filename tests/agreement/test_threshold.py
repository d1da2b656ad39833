# ruff: noqa: RUF001, RUF003 -- α on the page.
"""The threshold is judged on the lower bound of the headline's 95% interval: what the report
says of each facet, and whether a round can pass calibration."""

from __future__ import annotations

import pytest

from annotator.agreement.threshold import bound_text, calibration_verdict, judge


def coefficient(value, ci, **more):  # type: ignore[no-untyped-def]
    return {"value": value, "ci": ci, "undefined_reason": None, "se_note": None, **more}


def facet(key, value, ci, **more):  # type: ignore[no-untyped-def]
    return {
        "key": key,
        "headline": "krippendorff_alpha",
        "coefficients": {"krippendorff_alpha": coefficient(value, ci, **more)},
    }


def test_a_high_alpha_on_few_items_does_not_meet_the_threshold():
    # the report's case: α = 0.872 on 9 items, 95% CI 0.619–1.000
    judged = judge(coefficient(0.872, [0.619, 1.0]), 0.8)
    assert judged.meets is False
    assert judged.text == "does not meet α ≥ 0.8: lower bound 0.62 < 0.8"


def test_a_lower_bound_at_or_above_the_threshold_meets_it():
    assert judge(coefficient(0.9, [0.81, 0.99]), 0.8).text == (
        "meets α ≥ 0.8: lower bound 0.81 of the 95% CI"
    )
    assert judge(coefficient(0.9, [0.8, 1.0]), 0.8).meets is True


@pytest.mark.parametrize(
    ("low", "shown"), [(0.7996, "0.7996"), (0.8004, "0.80"), (0.79, "0.79"), (-0.123, "-0.12")]
)
def test_the_bound_is_never_rounded_across_the_threshold(low, shown):
    assert bound_text(low, 0.8) == shown
    judged = judge(coefficient(0.85, [low, 0.9]), 0.8)
    assert judged.meets is (low >= 0.8) and shown in judged.text


def test_a_defined_alpha_without_an_interval_does_not_meet_it():
    note = "jackknife undefined: leaving out 1 unit(s) leaves no variation"
    judged = judge(coefficient(0.95, None, se_note=note), 0.8)
    assert judged.meets is False and note in judged.text and "no 95% CI" in judged.text


def test_an_undefined_alpha_is_not_judged():
    judged = judge(
        coefficient(None, None, undefined_reason="no variation: every rating is 'a'"), 0.8
    )
    assert judged.meets is None and "no variation" in judged.text


def test_a_round_passes_when_every_defined_facet_meets_on_its_lower_bound():
    facets = [
        facet("screening", 0.95, [0.85, 1.0]),
        facet("symptom", 0.9, [0.82, 0.98]),
        facet("stage", None, None, undefined_reason="no variation"),
    ]
    verdict = calibration_verdict(facets, 0.8)
    assert verdict.passes and verdict.undefined == ["stage"]
    assert verdict.lowest_low == 0.82 and verdict.lowest_value == 0.9


def test_one_facet_whose_lower_bound_falls_short_fails_the_round():
    facets = [facet("screening", 0.95, [0.85, 1.0]), facet("symptom", 0.872, [0.619, 1.0])]
    verdict = calibration_verdict(facets, 0.8)
    assert not verdict.passes
    assert verdict.reason == "symptom does not meet α ≥ 0.8: lower bound 0.62 < 0.8"
    assert verdict.lowest_low == 0.619


def test_a_round_with_every_facet_undefined_cannot_pass():
    verdict = calibration_verdict([facet("screening", None, None)], 0.8)
    assert not verdict.passes and "undefined for every facet (screening)" in verdict.reason
