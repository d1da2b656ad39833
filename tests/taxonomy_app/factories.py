"""Factories and a small codebook document for the taxonomy_app tests."""

from __future__ import annotations

import copy
from typing import Any

import factory

from taxonomy_app.models import Category, Codebook, CodebookVersion, Facet, Proposal
from taxonomy_app.services import import_codebook

SMALL: dict[str, Any] = {
    "format": "annotator-codebook/1",
    "codebook": {"name": "Small bugs", "slug": "small-bugs", "description": "For tests."},
    "version": {"changelog": "First."},
    "facets": [
        {
            "key": "screening",
            "name": "Screening",
            "kind": "single",
            "required": True,
            "help": "Decide first.",
            "categories": [
                {"code": "relevant", "name": "Relevant", "definition": "A bug."},
                {"code": "not-a-bug", "name": "Not a bug", "definition": "No bug."},
            ],
        },
        {
            "key": "symptom",
            "name": "Symptom",
            "kind": "single",
            "required": False,
            "help": "",
            "categories": [
                {"code": "failure", "name": "Program failure", "definition": "Stops."},
                {
                    "code": "hang",
                    "name": "Hang",
                    "parent": "failure",
                    "definition": "Waits.",
                    "include": "Timeouts.",
                    "exclude": "Slow runs.",
                    "examples": "NCCL timeout.",
                },
                {"code": "oom", "name": "Out of memory", "parent": "failure", "definition": "OOM."},
                {"code": "crash", "name": "Crash", "parent": "failure", "definition": "Dies."},
                {"code": "slow", "name": "Slow", "definition": "Too slow."},
                {"code": "other", "name": "Other symptom", "definition": "None fits."},
            ],
        },
        {
            "key": "fix",
            "name": "Fix pattern",
            "kind": "multi",
            "required": False,
            "help": "",
            "categories": [
                {"code": "version", "name": "Fix version", "definition": "Upgrade."},
                {"code": "config", "name": "Fix config", "definition": "Settings."},
            ],
        },
    ],
}


def small_document(**changes: Any) -> dict[str, Any]:
    document = copy.deepcopy(SMALL)
    document.update(changes)
    return document


def published_small(user: Any = None) -> CodebookVersion:
    """The SMALL codebook imported and published as v1."""
    return import_codebook(data=_json(SMALL), fmt="json", publish=True, user=user)


# Label rules over SMALL, for the tests of their enforcement (SMALL itself stays rule-free).
SMALL_RULES: list[dict[str, Any]] = [
    {
        "kind": "requires",
        "facet": "symptom",
        "when_facet": "screening",
        "when_categories": ["relevant"],
    },
    {
        "kind": "forbids",
        "facet": "symptom",
        "when_facet": "screening",
        "when_categories": ["not-a-bug"],
    },
    {
        "kind": "forbids",
        "facet": "fix",
        "when_facet": "screening",
        "when_categories": ["not-a-bug"],
    },
    {"kind": "leaf_only", "facet": "symptom"},
    {"kind": "max_choices", "facet": "fix", "max_choices": 1},
]


def published_with_rules(user: Any = None) -> CodebookVersion:
    """SMALL with SMALL_RULES, as another codebook ("ruled-bugs"), published as v1."""
    document = small_document(rules=SMALL_RULES)
    document["codebook"] = {"name": "Ruled bugs", "slug": "ruled-bugs"}
    return import_codebook(data=_json(document), fmt="json", publish=True, user=user)


def _json(document: dict[str, Any]) -> str:
    import json

    return json.dumps(document)


def category(version: CodebookVersion, facet: str, code: str) -> Category:
    return Category.objects.get(facet__version=version, facet__key=facet, code=code)


class CodebookFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Codebook

    name = factory.Sequence(lambda n: f"Codebook {n}")
    slug = factory.Sequence(lambda n: f"codebook-{n}")


class VersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CodebookVersion

    codebook = factory.SubFactory(CodebookFactory)
    number = 1


class FacetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Facet

    version = factory.SubFactory(VersionFactory)
    key = factory.Sequence(lambda n: f"facet-{n}")
    name = factory.Sequence(lambda n: f"Facet {n}")


class CategoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Category

    facet = factory.SubFactory(FacetFactory)
    code = factory.Sequence(lambda n: f"category-{n}")
    name = factory.Sequence(lambda n: f"Category {n}")


class ProposalFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Proposal

    facet = factory.SubFactory(FacetFactory)
    name = factory.Sequence(lambda n: f"Proposed {n}")
