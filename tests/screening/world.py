"""A study with a screening round over a synthetic corpus whose relevant issues share words of
their own (tests/screening/synthetic.py), for the tests of screening rounds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotator.screening.models import ScreeningPlan
from annotator.screening.services import start_screening_round
from annotator.studies.models import Assignment, Membership, Study
from annotator.studies.services import (
    add_member,
    create_study,
    next_assignment,
    select_issues,
    submit_annotation,
)
from taxonomy_app.models import CodebookVersion
from tests.factories import IssueFactory, RepositoryFactory, UserFactory
from tests.screening.synthetic import vocabulary_dataset
from tests.studies.factories import World
from tests.taxonomy_app.factories import published_small


@dataclass
class ScreeningWorld:
    world: World
    plan: ScreeningPlan
    truth: dict[int, bool] = field(default_factory=dict)  # issue id → relevant

    @property
    def study(self) -> Study:
        return self.world.study

    @property
    def screeners(self) -> list[Any]:
        return self.world.annotators

    def screen(self, annotator: Any) -> Assignment | None:
        """The annotator takes the next item and screens it truthfully; the assignment."""
        assignment = next_assignment(study=self.study, annotator=annotator)
        if assignment is None:
            return None
        issue_id = assignment.item.issue_id if hasattr(assignment, "item") else None
        if issue_id is None:
            from annotator.studies.models import Item

            issue_id = Item.objects.get(pk=assignment.item_id).issue_id
        code = "relevant" if self.truth[issue_id] else "not-a-bug"
        submit_annotation(
            assignment=assignment, user=annotator, labels=self.world.labels(screening=code)
        )
        return assignment


def screening_world(
    *,
    n: int = 200,
    share: float = 0.1,
    k: int = 2,
    screeners: int = 2,
    seed: int = 0,
    **plan: Any,
) -> ScreeningWorld:
    owner = UserFactory(username="screening-owner")
    version = CodebookVersion.objects.filter(
        codebook__slug="small-bugs", status="published"
    ).first() or published_small(user=owner)
    study = create_study(name="Screening", codebook_version=version, owner=owner, overlap_k=k)
    people = [UserFactory(username=f"screener-{i}") for i in range(screeners)]
    for person in people:
        add_member(study=study, user=person, role=Membership.Role.ANNOTATOR)
    texts, labels = vocabulary_dataset(n=n, share=share, seed=seed)
    repository = RepositoryFactory(owner="hpcaitech", name="ColossalAI")
    issues = [IssueFactory(repository=repository, title=text[:60], body=text) for text in texts]
    made = start_screening_round(study=study, user=owner, seed=seed, **plan)
    select_issues(
        study=study, round=made.round, filters={"repository": repository.pk}, seed=seed, user=owner
    )
    world = World(
        study=study,
        owner=owner,
        annotators=people,
        round=made.round,
        version=version,
        issues=issues,
    )
    truth = {issue.pk: bool(label) for issue, label in zip(issues, labels, strict=True)}
    return ScreeningWorld(world=world, plan=made, truth=truth)
