"""The pure label-rule evaluator (taxonomy_app.rules) and the rules' own checks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from taxonomy_app.rules import (
    FacetInfo,
    Rule,
    RuleError,
    check_labels,
    check_rules,
    describe,
    violations,
)

FACETS = {
    "screening": FacetInfo(
        "screening",
        "Screening",
        False,
        {"relevant": "Relevant", "not-a-bug": "Not a bug", "question": "Question"},
    ),
    "symptom": FacetInfo(
        "symptom",
        "Symptom",
        False,
        {"failure": "Program failure", "hang": "Hang", "slow": "Slow", "perf": "Performance"},
        groups=frozenset({"failure", "perf"}),
    ),
    "fix": FacetInfo(
        "fix",
        "Fix pattern",
        True,
        {"version": "Fix version", "config": "Fix config", "none": "None"},
    ),
}
REQUIRES = Rule("requires", "symptom", "screening", ("relevant",))
FORBIDS = Rule("forbids", "symptom", "screening", ("not-a-bug", "question"))
LEAF = Rule("leaf_only", "symptom")
LEAF_BUT_PERF = Rule("leaf_only", "symptom", categories=("perf",))
EXCLUSIVE = Rule("exclusive", "fix", categories=("none", "version", "config"))
AT_MOST_ONE = Rule("max_choices", "fix", max_choices=1)
ALWAYS = Rule("requires", "fix")


@pytest.mark.parametrize(
    ("rule", "labels", "error"),
    [
        (REQUIRES, {"screening": ["relevant"], "symptom": ["hang"]}, None),
        (REQUIRES, {"screening": ["not-a-bug"]}, None),
        (REQUIRES, {}, None),
        (REQUIRES, {"screening": ["relevant"]}, "required when Screening is Relevant"),
        (
            REQUIRES,
            {"screening": ["relevant"], "symptom": []},
            "required when Screening is Relevant",
        ),
        (FORBIDS, {"screening": ["not-a-bug"]}, None),
        (FORBIDS, {"screening": ["relevant"], "symptom": ["hang"]}, None),
        (FORBIDS, {"screening": ["not-a-bug"], "symptom": ["hang"]}, "Not a bug allows no symptom"),
        (FORBIDS, {"screening": ["question"], "symptom": ["slow"]}, "Question allows no symptom"),
        (LEAF, {"symptom": ["hang"]}, None),
        (LEAF, {"symptom": ["slow"]}, None),
        (LEAF, {}, None),
        (
            LEAF,
            {"symptom": ["failure"]},
            "a leaf category: choose one of Program failure's sub-categories",
        ),
        (LEAF_BUT_PERF, {"symptom": ["perf"]}, None),
        (
            LEAF_BUT_PERF,
            {"symptom": ["failure"]},
            "a leaf category: choose one of Program failure's sub-categories",
        ),
        (
            EXCLUSIVE,
            {"fix": ["version", "config"]},
            "Fix version and Fix config exclude each other: choose one",
        ),
        (EXCLUSIVE, {"fix": ["version"]}, None),
        (
            EXCLUSIVE,
            {"fix": ["none", "config"]},
            "None and Fix config exclude each other: choose one",
        ),
        (AT_MOST_ONE, {"fix": ["version"]}, None),
        (AT_MOST_ONE, {"fix": ["version", "config"]}, "at most one choice (2 chosen)"),
        (Rule("max_choices", "fix", max_choices=2), {"fix": ["version", "config"]}, None),
        (ALWAYS, {"fix": ["config"]}, None),
        (ALWAYS, {"screening": ["question"]}, "required"),
    ],
)
def test_each_rule_kind_passes_and_fails(rule, labels, error):
    errors = check_labels([rule], labels, FACETS)

    assert errors == ({rule.facet: error} if error else {})


def test_errors_come_by_facet_the_first_broken_rule_of_each():
    rules = [REQUIRES, LEAF, AT_MOST_ONE, EXCLUSIVE]
    labels = {"screening": ["relevant"], "fix": ["version", "config"]}

    assert check_labels(rules, labels, FACETS) == {
        "symptom": "required when Screening is Relevant",
        "fix": "at most one choice (2 chosen)",
    }
    assert [v.index for v in violations(rules, labels, FACETS)] == [0, 2, 3]


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        (REQUIRES, "required when Screening is Relevant"),
        (FORBIDS, "left empty when Screening is Not a bug or Question"),
        (LEAF, "choose a leaf category: groups are not selectable"),
        (LEAF_BUT_PERF, "choose a leaf category: groups are not selectable (except Performance)"),
        (EXCLUSIVE, "at most one of None, Fix version or Fix config"),
        (AT_MOST_ONE, "at most one choice"),
        (Rule("max_choices", "fix", max_choices=3), "at most 3 choices"),
        (ALWAYS, "required"),
    ],
)
def test_rules_read_as_a_line_of_the_guideline(rule, text):
    assert describe(rule, FACETS) == text


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (Rule("sometimes", "symptom"), "field 'kind': unknown rule kind 'sometimes'"),
        (
            Rule("requires", "cause", "screening", ("relevant",)),
            "field 'facet': unknown facet 'cause'",
        ),
        (Rule("requires", "symptom", "stage", ("x",)), "field 'when_facet': unknown facet 'stage'"),
        (
            Rule("requires", "symptom", "screening", ("hang",)),
            "field 'when_categories': 'hang' is not a category of facet 'screening'",
        ),
        (Rule("requires", "symptom", "screening"), "field 'when_categories': name one category"),
        (Rule("forbids", "symptom"), "field 'when_facet': forbids needs a condition"),
        (
            Rule("requires", "symptom", "symptom", ("hang",)),
            "field 'when_facet': a facet cannot depend on itself",
        ),
        (
            Rule("max_choices", "fix", max_choices=0),
            "field 'max_choices': a whole number of 1 or more",
        ),
        (Rule("max_choices", "fix"), "field 'max_choices': a whole number of 1 or more"),
        (
            Rule("max_choices", "symptom", max_choices=2),
            "'symptom' is a single-choice facet already",
        ),
        (
            Rule("leaf_only", "fix"),
            "field 'kind': leaf_only needs a hierarchical facet; 'fix' has no sub",
        ),
        (
            Rule("leaf_only", "symptom", categories=("hang",)),
            "field 'categories': 'hang' has no sub-categories",
        ),
        (
            Rule("exclusive", "fix", categories=("version",)),
            "field 'categories': exclusive needs two",
        ),
        (
            Rule("exclusive", "fix", categories=("version", "hang")),
            "field 'categories': 'hang' is not a category of facet 'fix'",
        ),
        (
            Rule("leaf_only", "symptom", "screening", ("relevant",)),
            "field 'when_facet': a leaf_only rule takes no condition",
        ),
        (
            Rule("max_choices", "fix", categories=("version",), max_choices=1),
            "field 'categories': a max_choices rule takes no categories",
        ),
        (
            Rule("requires", "fix", max_choices=1),
            "field 'max_choices': only for a max_choices rule",
        ),
    ],
)
def test_rules_that_do_not_fit_the_codebook_are_refused_naming_the_rule_and_field(rule, message):
    with pytest.raises(RuleError) as refused:
        check_rules([REQUIRES, rule], FACETS)

    assert str(refused.value).startswith(f"rule 2 ({rule.kind} {rule.facet}): ")
    assert message in str(refused.value)


def test_the_seed_like_rules_fit():
    check_rules([REQUIRES, FORBIDS, LEAF, LEAF_BUT_PERF, EXCLUSIVE, AT_MOST_ONE, ALWAYS], FACETS)


def test_the_evaluator_imports_no_django():
    code = "import sys, taxonomy_app.rules; print(any(m.startswith('django') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "False"
