"""Builders for the study tests: a study on the small published codebook, with issues selected."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotator.studies.codebook import codebook_schema
from annotator.studies.models import Membership, Round, Study
from annotator.studies.services import add_member, create_round, create_study, select_issues
from taxonomy_app.models import Category, CodebookVersion
from tests.factories import IssueFactory, RepositoryFactory, UserFactory
from tests.taxonomy_app.factories import published_small


@dataclass
class World:
    study: Study
    owner: Any
    annotators: list[Any]
    round: Round
    version: CodebookVersion
    issues: list[Any] = field(default_factory=list)

    def labels(self, **codes: str | list[str]) -> dict[int, list[int]]:
        """Labels by facet id from facet key → code(s), e.g. labels(screening="relevant")."""
        schema = codebook_schema(self.version)
        out: dict[int, list[int]] = {}
        for facet in schema.facets:
            wanted = codes.get(facet.key.replace("-", "_"), [])
            wanted = [wanted] if isinstance(wanted, str) else wanted
            ids = {c.code: c.id for c in facet.categories}
            out[facet.id] = [ids[code] for code in wanted]
        return out

    def category(self, facet: str, code: str) -> Category:
        return Category.objects.get(facet__version=self.version, facet__key=facet, code=code)


def make_world(
    *,
    items: int = 4,
    k: int = 2,
    annotators: int = 2,
    calibration: bool = False,
    version: CodebookVersion | None = None,
) -> World:
    owner = UserFactory(username="study-owner")
    version = (
        version
        or CodebookVersion.objects.filter(codebook__slug="small-bugs", status="published").first()
        or published_small(user=owner)
    )
    study = create_study(name="Study", codebook_version=version, owner=owner, overlap_k=k)
    people = [UserFactory(username=f"annotator-{i}") for i in range(annotators)]
    for person in people:
        add_member(study=study, user=person, role=Membership.Role.ANNOTATOR)
    round = study.rounds.get()
    if calibration:
        round = create_round(study=study, kind=Round.Kind.CALIBRATION)
    repository = RepositoryFactory(owner="hpcaitech", name="ColossalAI")
    issues = [IssueFactory(repository=repository) for _ in range(items)]
    select_issues(
        study=study, round=round, filters={"repository": repository.pk}, seed=1, user=owner
    )
    return World(
        study=study, owner=owner, annotators=people, round=round, version=version, issues=issues
    )
