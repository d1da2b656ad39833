"""A study shaped like the reference study (arXiv 2512.20345): 849 decided issues from three
repositories, 34 leaf symptoms under two groups (and `other` at the top level), 28 root causes,
6 fix patterns (several may be chosen), 5 stages, 3 annotators; built fast with bulk_create.

Labels are drawn from a seeded generator: some issues screened out (no other facets), some with
no root cause or fix, a few items left undecided (the analysis and the export leave them out).
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from typing import Any

import yaml

from annotator.adjudication.models import Decision, DecisionLabel
from annotator.issues.models import Issue, Repository
from annotator.studies.models import Item, Membership, Round, Study
from annotator.studies.services import add_member, create_round, create_study, select_issues
from taxonomy_app.models import Category, CodebookVersion
from taxonomy_app.services import import_codebook
from tests.factories import UserFactory

SEED_CODEBOOK = "taxonomy_app/seed/distributed_dl_bugs.yaml"
REPOSITORIES = (
    ("hpcaitech", "ColossalAI"),
    ("deepspeedai", "DeepSpeed"),
    ("NVIDIA", "Megatron-LM"),
)
DECIDED, UNDECIDED = 849, 11
# The seed codebook's categories, with more of the same kind up to the reference study's counts.
MORE_SYMPTOMS = {
    "program-failure": (
        "type-error",
        "value-error",
        "assertion-failure",
        "kernel-launch-failure",
        "launcher-crash",
        "compilation-error",
    ),
    "unexpected-performance": (
        "memory-leak",
        "accuracy-drop",
        "slow-communication",
        "load-imbalance",
        "nondeterminism",
    ),
}
MORE_CAUSES = (
    "wrong-tensor-shape",
    "dtype-mismatch",
    "device-placement-error",
    "rank-indexing-error",
    "process-group-misuse",
    "collective-order-mismatch",
    "checkpoint-format-mismatch",
    "state-dict-key-mismatch",
    "gradient-sync-error",
    "optimizer-sharding-error",
    "kernel-bug",
    "compiler-bug",
    "environment-variable-error",
    "network-configuration-error",
    "file-system-error",
    "numerical-instability",
    "build-script-error",
)
FIXES = (
    "fix-communication-configuration",
    "fix-dependency-version",
    "fix-distributed-api-usage",
    "fix-device-assignment",
    "fix-behavior-logic",
    "fix-memory-core-setting",
)


def _category(code: str, parent: str | None = None) -> dict[str, Any]:
    name = code.replace("-", " ").capitalize()
    out = {"code": code, "name": name, "definition": f"{name}."}
    if parent:
        out["parent"] = parent
    return out


def reference_document() -> dict[str, Any]:
    """The seed codebook with the reference study's category counts (34 leaf symptoms, 28
    root causes, 6 fix patterns) and no label rules."""
    with open(SEED_CODEBOOK, encoding="utf-8") as stream:
        document = copy.deepcopy(yaml.safe_load(stream))
    document["codebook"] = {"name": "Reference-sized bugs", "slug": "reference-sized"}
    document.pop("rules", None)
    facets = {f["key"]: f for f in document["facets"]}
    symptoms = facets["symptom"]["categories"]
    other = [c for c in symptoms if c["code"] == "other"]
    symptoms = [c for c in symptoms if c["code"] != "other"]
    for group, codes in MORE_SYMPTOMS.items():
        last = max(i for i, c in enumerate(symptoms) if c.get("parent") == group)
        symptoms[last + 1 : last + 1] = [_category(code, group) for code in codes]
    facets["symptom"]["categories"] = symptoms + other
    causes = facets["root-cause"]["categories"]
    facets["root-cause"]["categories"] = (
        causes[:-1] + [_category(code) for code in MORE_CAUSES] + causes[-1:]
    )
    fixes = facets["fix-pattern"]["categories"]
    facets["fix-pattern"]["categories"] = [c for c in fixes if c["code"] in FIXES]
    return document


@dataclass
class ReferenceStudy:
    study: Study
    version: CodebookVersion
    annotators: list[Any]


def _issues(rng: random.Random) -> None:
    repositories = [Repository.objects.create(owner=o, name=n) for o, n in REPOSITORIES]
    weights = (0.5, 0.3, 0.2)
    Issue.objects.bulk_create(
        Issue(
            repository=rng.choices(repositories, weights)[0],
            number=n,
            title=f"Issue {n}",
            state="closed",
            content_hash=f"{n:064x}",
        )
        for n in range(1, DECIDED + UNDECIDED + 1)
    )


def _labels(rng: random.Random, codes: dict[str, list[str]]) -> dict[str, list[str]]:
    if rng.random() < 0.12:
        return {"screening": [rng.choice(["not-a-bug", "question", "duplicate"])]}
    labels = {
        "screening": ["relevant"],
        "distributed": [rng.choices(["yes", "no"], (0.6, 0.4))[0]],
        "stage": [rng.choices(codes["stage"], (0.1, 0.15, 0.2, 0.45, 0.1))[0]],
        "symptom": [rng.choice(codes["symptom"])],
    }
    if rng.random() < 0.9:
        labels["root-cause"] = [rng.choice(codes["root-cause"])]
    if rng.random() < 0.85:
        labels["fix-pattern"] = rng.sample(codes["fix-pattern"], rng.choice((1, 1, 1, 2, 3)))
    return labels


def build_reference_study(seed: int = 2512) -> ReferenceStudy:
    rng = random.Random(seed)
    owner = UserFactory(username="reference-owner")
    version = import_codebook(
        data=json.dumps(reference_document()), fmt="json", publish=True, user=owner
    )
    study = create_study(name="Reference study", codebook_version=version, owner=owner, overlap_k=3)
    annotators = [UserFactory(username=f"rater-{i}") for i in range(1, 4)]
    for person in annotators:
        add_member(study=study, user=person, role=Membership.Role.ANNOTATOR)
    _issues(rng)
    calibration = create_round(study=study, kind=Round.Kind.CALIBRATION)
    select_issues(
        study=study,
        round=study.rounds.get(number=1),
        filters={},
        sample_size=760,
        seed=seed,
        user=owner,
    )
    select_issues(study=study, round=calibration, filters={}, seed=seed, user=owner)
    _decide(study, version, rng, owner)
    return ReferenceStudy(study, version, annotators)


def _decide(study: Study, version: CodebookVersion, rng: random.Random, owner: Any) -> None:
    categories = {
        (c.facet.key, c.code): c
        for c in Category.objects.filter(facet__version=version).select_related("facet")
    }
    codes: dict[str, list[str]] = {}
    parents = {c.parent_id for c in categories.values()}
    for (key, code), c in categories.items():
        if c.pk not in parents:  # leaves only
            codes.setdefault(key, []).append(code)
    items = list(Item.objects.filter(study=study).order_by("pk"))
    decided = items[:DECIDED]
    sources = ("unanimous", "majority", "adjudicated")
    decisions = Decision.objects.bulk_create(
        Decision(
            item=item,
            source=(source := rng.choices(sources, (0.6, 0.25, 0.15))[0]),
            reason="guideline-gap" if source == "adjudicated" else "",
            decided_by=owner,
        )
        for item in decided
    )
    rows = []
    for decision in decisions:
        for key, chosen in _labels(rng, codes).items():
            for code in chosen:
                c = categories[(key, code)]
                rows.append(DecisionLabel(decision=decision, facet_id=c.facet_id, category=c))
    DecisionLabel.objects.bulk_create(rows)
