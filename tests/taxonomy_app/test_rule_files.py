"""Label rules in codebook files: round trips in JSON and YAML, bad rules refused naming the rule
and field with nothing written, the seed's rules, and rules carried into a draft."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taxonomy_app.errors import CodebookError
from taxonomy_app.formats import (
    CodebookFormatError,
    dump_document,
    load_document,
    parse_codebook,
    to_document,
)
from taxonomy_app.models import Codebook, CodebookVersion, LabelRule
from taxonomy_app.rules import Rule
from taxonomy_app.services import export_version, import_codebook, publish_version, start_draft
from taxonomy_app.services.rules import version_rules
from tests.taxonomy_app.factories import small_document

SEED = Path(__file__).resolve().parents[2] / "taxonomy_app" / "seed" / "distributed_dl_bugs.yaml"
RULES = [
    {
        "kind": "requires",
        "facet": "symptom",
        "when_facet": "screening",
        "when_categories": ["relevant"],
    },
    {
        "kind": "forbids",
        "facet": "fix",
        "when_facet": "screening",
        "when_categories": ["not-a-bug"],
    },
    {"kind": "leaf_only", "facet": "symptom"},
    {"kind": "exclusive", "facet": "fix", "categories": ["version", "config"]},
    {"kind": "max_choices", "facet": "fix", "max_choices": 1},
]


def with_rules(*rules: dict) -> str:
    return json.dumps(small_document(rules=list(rules)))


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_rules_survive_export_and_import(db, fmt):
    version = import_codebook(data=with_rules(*RULES), fmt="json", publish=True)

    text = export_version(version=version, fmt=fmt)
    document = load_document(text, fmt)
    again = import_codebook(data=text.replace("small-bugs", "small-again"), fmt=fmt)

    assert document["rules"] == RULES
    assert version_rules(again) == version_rules(version)
    assert version_rules(again)[0] == Rule("requires", "symptom", "screening", ("relevant",))
    assert [r.kind for r in version_rules(again)] == [r["kind"] for r in RULES]


def test_pure_round_trip_keeps_rules_in_order():
    spec = parse_codebook(small_document(rules=RULES))

    again = parse_codebook(load_document(dump_document(to_document(spec), "yaml"), "yaml"))

    assert again == spec
    assert again.rules[-1] == Rule("max_choices", "fix", max_choices=1)


def test_a_file_without_rules_writes_no_rules_key():
    assert "rules" not in to_document(parse_codebook(small_document()))


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            {
                "kind": "requires",
                "facet": "cause",
                "when_facet": "screening",
                "when_categories": ["relevant"],
            },
            "rule 2 (requires cause): field 'facet': unknown facet 'cause'",
        ),
        (
            {
                "kind": "requires",
                "facet": "symptom",
                "when_facet": "screening",
                "when_categories": ["hang"],
            },
            "rule 2 (requires symptom): field 'when_categories': 'hang' is not a category of facet "
            "'screening'",
        ),
        (
            {"kind": "often", "facet": "symptom"},
            "rule 2 (often symptom): field 'kind': unknown rule kind 'often'",
        ),
        ({"facet": "symptom"}, "rule 2: field 'kind': unknown rule kind None"),
        (
            {"kind": "max_choices", "facet": "fix", "max_choices": 0},
            "rule 2 (max_choices fix): field 'max_choices': a whole number of 1 or more is required",
        ),
        (
            {"kind": "max_choices", "facet": "fix", "max_choices": "two"},
            "rule 2 (max_choices fix): field 'max_choices': expected a whole number",
        ),
        (
            {"kind": "leaf_only", "facet": "fix"},
            "rule 2 (leaf_only fix): field 'kind': leaf_only needs a hierarchical facet",
        ),
        (
            {"kind": "exclusive", "facet": "fix", "categories": "version"},
            "rule 2 (exclusive fix): field 'categories': exclusive needs two categories or more",
        ),
        (
            {"kind": "requires", "facet": "symptom", "when": "screening"},
            "rule 2 (requires symptom): field 'when': unknown field",
        ),
        (
            {"kind": "exclusive", "facet": "fix", "categories": [1, 2]},
            "rule 2 (exclusive fix): field 'categories': expected a list of category codes",
        ),
        ("symptom", "rule 2: expected a mapping of fields"),
    ],
)
def test_bad_rules_are_refused_naming_rule_and_field_and_nothing_is_written(db, rule, message):
    with pytest.raises(CodebookFormatError) as refused:
        import_codebook(data=with_rules(RULES[0], rule), fmt="json")

    assert message in str(refused.value)
    assert not Codebook.objects.exists()
    assert not LabelRule.objects.exists()


def test_rules_must_be_a_list(db):
    with pytest.raises(CodebookFormatError, match="field 'rules': expected a list of rules"):
        import_codebook(data=json.dumps(small_document(rules={"kind": "leaf_only"})), fmt="json")


def test_seed_declares_its_rules_as_its_definitions_say():
    spec = parse_codebook(load_document(SEED.read_text(), "yaml"))
    rules = {(r.kind, r.facet): r for r in spec.rules}
    others = {"not-a-bug", "question", "duplicate", "unclear"}

    for facet in ("distributed", "stage", "symptom"):
        assert rules["requires", facet].when_categories == ("relevant",)
    for facet in ("distributed", "stage", "symptom", "root-cause", "fix-pattern"):
        assert set(rules["forbids", facet].when_categories) == others
    assert (
        "requires",
        "root-cause",
    ) not in rules  # "if the thread never finds the cause, leave this empty"
    assert ("requires", "fix-pattern") not in rules  # "leave empty when there is no fix"
    assert ("leaf_only", "symptom") in rules  # "Group of symptoms; label with one of its leaves."


def test_a_draft_copies_the_published_rules_and_publishing_refuses_rules_that_broke(db):
    version = import_codebook(data=with_rules(*RULES), fmt="json", publish=True)

    draft = start_draft(codebook=version.codebook)

    assert version_rules(draft) == version_rules(version)
    assert LabelRule.objects.filter(version=draft).count() == len(RULES)
    # A code the rule names is renamed in the draft: publishing names the rule.
    draft.facets.get(key="screening").categories.filter(code="relevant").update(code="bug")
    with pytest.raises(
        CodebookError, match=r"rule 1 \(requires symptom\): field 'when_categories'"
    ):
        publish_version(version=draft)
    assert CodebookVersion.objects.get(pk=draft.pk).status == "draft"
