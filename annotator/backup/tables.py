"""What a study backup holds: every table, in the order a restore writes them, and how each
selects the rows of one study.

The order is the foreign-key order (a row's references are restored before it); references
within a table (a category's parent, a version's `based_on`) are resolved after the table.
`tests/backup/test_coverage.py` walks every model of the project and fails when a table that
belongs to a study (a foreign key path to Study, Item or a codebook) is neither here nor listed
in NOT_ARCHIVED with its reason, so a new table cannot silently escape backups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.contrib.auth import get_user_model
from django.db import models
from django.db.models import Q, QuerySet

from annotator.adjudication.models import (
    AdjudicationSettings,
    Change,
    Comment,
    Decision,
    DecisionLabel,
    ItemAgreement,
)
from annotator.agreement.models import (
    AgreementRun,
    AgreementSettings,
    CalibrationPass,
    HeadlineDeclaration,
)
from annotator.exports.models import ExportJob, Pseudonym
from annotator.issues.models import Issue, IssueComment, Repository, RepositoryAlias
from annotator.machine.models import MachineCall, MachineRater, MachineRun
from annotator.screening.models import ScreeningAudit, ScreeningModel, ScreeningPlan
from annotator.similarity.models import DuplicateMark
from annotator.studies.models import (
    Annotation,
    AnnotationLabel,
    Assignment,
    GoldAnswer,
    Invitation,
    Item,
    Membership,
    Round,
    Selection,
    Study,
)
from taxonomy_app.models import (
    Category,
    ChangeOperation,
    Codebook,
    CodebookVersion,
    Facet,
    LabelRule,
    Proposal,
)

User = get_user_model()
USERS = User._meta.label_lower
# A user travels as who they are, never with what lets them in: no password hash, no staff or
# superuser flag (a restore must not be a way to grant privileges), no groups or permissions.
USER_FIELDS = ("id", "username", "email", "first_name", "last_name", "is_active", "date_joined")

# Ids inside JSON columns: (path, table). "*" walks every element of a list.
JsonRefs = dict[str, tuple[tuple[tuple[str, ...], str], ...]]


@dataclass
class Scope:
    """The study being dumped and the sets its tables select by, computed once (inside the
    dump's snapshot) so each table's query stays a plain filter."""

    study: Study

    @cached_property
    def version_ids(self) -> list[int]:
        return sorted(codebook_versions(self.study))

    @cached_property
    def marked_issue_ids(self) -> list[int]:
        """Issues the study's duplicate marks name (current or withdrawn), both sides: a
        duplicate left out is in no item, yet the owner's decision about it is archived."""
        ids: set[int] = set()
        marks = DuplicateMark.objects.filter(study=self.study)
        for issue, other in marks.values_list("issue_id", "duplicate_of_id"):
            ids.add(issue)
            if other is not None:
                ids.add(other)
        return sorted(ids)

    def issues(self) -> QuerySet[Any]:
        """The archived issues: those of the study's items and those its marks name."""
        of_items = Q(pk__in=Item.objects.filter(study=self.study).values("issue_id"))
        if not self.marked_issue_ids:
            return Issue.objects.filter(of_items)
        return Issue.objects.filter(of_items | Q(pk__in=self.marked_issue_ids))

    @cached_property
    def repository_ids(self) -> list[int]:
        ids = set(self.issues().order_by().values_list("repository_id", flat=True).distinct())
        for filters in Selection.objects.filter(study=self.study).values_list("filters", flat=True):
            value = str((filters or {}).get("repository", ""))
            if value.isdigit():
                ids.add(int(value))
        return sorted(Repository.objects.filter(pk__in=ids).values_list("pk", flat=True))


@dataclass(frozen=True)
class Table:
    label: str
    model: type[models.Model]
    select: Callable[[Scope], QuerySet[Any]]
    exclude: tuple[str, ...] = ()  # fields never archived (with the reason in README.md)
    only: tuple[str, ...] = ()  # when set, the only fields archived
    natural_key: tuple[str, ...] = ()  # rows that may already exist in a target are found by it
    json_refs: JsonRefs = field(default_factory=dict)
    # (app, migration) that created the table: an archive whose migrations stop before it was
    # made before the table existed and restores without it (no rows); any later archive must
    # hold it. Empty for the tables of the first archive format.
    added_in: tuple[str, str] | None = None

    @property
    def member(self) -> str:
        return f"{self.label}.jsonl"

    def fields(self) -> list[models.Field[Any, Any]]:
        """The archived fields, pk first."""
        concrete = [f for f in self.model._meta.concrete_fields if f.name not in self.exclude]
        if self.only:
            concrete = [f for f in concrete if f.name in self.only]
        return sorted(concrete, key=lambda f: not f.primary_key)


def _through(model: type[models.Model], name: str) -> type[models.Model]:
    through: type[models.Model] = model._meta.get_field(name).remote_field.through  # type: ignore[union-attr]
    return through


TARGETS = _through(ChangeOperation, "targets")
DISAGREEING = _through(ItemAgreement, "disagreeing_facets")


def _users(scope: Scope) -> QuerySet[Any]:
    """Every user any archived row points to: members, but also a former annotator's
    assignments, the author of a comment, whoever proposed a category or started a job."""
    condition = Q(pk__in=[])
    for table in TABLES:
        for f in table.fields():
            if f.is_relation and f.related_model is User:
                condition |= Q(pk__in=table.select(scope).values(f.attname))
    return User.objects.filter(condition)


def _by(model: type[models.Model], path: str) -> Callable[[Scope], QuerySet[Any]]:
    return lambda scope: model._default_manager.filter(**{path: scope.study})


def _versions(model: type[models.Model], path: str) -> Callable[[Scope], QuerySet[Any]]:
    return lambda scope: model._default_manager.filter(**{f"{path}__in": scope.version_ids})


RUN_REFS = (
    (("study",), "studies.study"),
    (("codebook_version",), "taxonomy_app.codebookversion"),
)

TABLES: list[Table] = [
    Table(USERS, User, _users, only=USER_FIELDS, natural_key=("username",)),
    Table(
        "issues.repository",
        Repository,
        lambda s: Repository.objects.filter(pk__in=s.repository_ids),
        natural_key=("owner", "name"),
    ),
    Table(
        "issues.repositoryalias",
        RepositoryAlias,
        lambda s: RepositoryAlias.objects.filter(repository__in=s.repository_ids),
        natural_key=("owner", "name"),
    ),
    # search_vector is derived from title, body and comments; a restore re-indexes.
    # The issues of the study's items (an issue in several rounds is one item of each, and is
    # archived once) and those its duplicate marks name.
    Table(
        "issues.issue",
        Issue,
        lambda s: s.issues(),
        exclude=("search_vector",),
        natural_key=("repository", "number"),
    ),
    Table(
        "issues.issuecomment",
        IssueComment,
        lambda s: IssueComment.objects.filter(issue__in=s.issues().values("pk")),
        natural_key=("issue", "key"),
    ),
    Table(
        "taxonomy_app.codebook",
        Codebook,
        lambda s: Codebook.objects.filter(versions__in=s.version_ids).distinct(),
        natural_key=("slug",),
    ),
    Table(
        "taxonomy_app.codebookversion",
        CodebookVersion,
        _versions(CodebookVersion, "pk"),
        natural_key=("codebook", "number"),
    ),
    Table("taxonomy_app.facet", Facet, _versions(Facet, "version"), natural_key=("version", "key")),
    Table(
        "taxonomy_app.category",
        Category,
        _versions(Category, "facet__version"),
        natural_key=("facet", "code"),
    ),
    Table("taxonomy_app.labelrule", LabelRule, _versions(LabelRule, "version")),
    Table("taxonomy_app.proposal", Proposal, _versions(Proposal, "facet__version")),
    Table(
        "taxonomy_app.changeoperation",
        ChangeOperation,
        _versions(ChangeOperation, "version"),
        json_refs={"detail": ((("proposal",), "taxonomy_app.proposal"),)},
    ),
    Table(TARGETS._meta.label_lower, TARGETS, _versions(TARGETS, "changeoperation__version")),
    Table("studies.study", Study, lambda s: Study.objects.filter(pk=s.study.pk)),
    Table("studies.membership", Membership, _by(Membership, "study")),
    Table("studies.invitation", Invitation, _by(Invitation, "study")),
    Table("studies.round", Round, _by(Round, "study")),
    Table(
        "studies.selection",
        Selection,
        _by(Selection, "study"),
        json_refs={"filters": ((("repository",), "issues.repository"),)},
    ),
    Table("studies.item", Item, _by(Item, "study")),
    Table("studies.assignment", Assignment, _by(Assignment, "item__study")),
    Table("studies.annotation", Annotation, _by(Annotation, "assignment__item__study")),
    Table(
        "studies.goldanswer",
        GoldAnswer,
        _by(GoldAnswer, "item__study"),
        added_in=("studies", "0009_gold_and_reliability_sample"),
    ),
    Table(
        "studies.annotationlabel",
        AnnotationLabel,
        _by(AnnotationLabel, "annotation__assignment__item__study"),
    ),
    Table(
        "adjudication.adjudicationsettings",
        AdjudicationSettings,
        _by(AdjudicationSettings, "study"),
    ),
    Table("adjudication.itemagreement", ItemAgreement, _by(ItemAgreement, "item__study")),
    Table(
        DISAGREEING._meta.label_lower, DISAGREEING, _by(DISAGREEING, "itemagreement__item__study")
    ),
    Table("adjudication.decision", Decision, _by(Decision, "item__study")),
    Table("adjudication.decisionlabel", DecisionLabel, _by(DecisionLabel, "decision__item__study")),
    Table("adjudication.comment", Comment, _by(Comment, "item__study")),
    Table("adjudication.change", Change, _by(Change, "item__study")),
    Table("agreement.agreementsettings", AgreementSettings, _by(AgreementSettings, "study")),
    Table(
        "agreement.agreementrun",
        AgreementRun,
        _by(AgreementRun, "study"),
        json_refs={"result": (*RUN_REFS, (("raters", "*", "id"), USERS)), "inputs": RUN_REFS},
    ),
    Table("agreement.calibrationpass", CalibrationPass, _by(CalibrationPass, "round__study")),
    Table(
        "agreement.headlinedeclaration",
        HeadlineDeclaration,
        _by(HeadlineDeclaration, "study"),
        added_in=("agreement", "0004_headline_declaration"),
    ),
    # Machine raters, their runs and every call (prompt, raw response, labels): the provenance a
    # paper reports travels with the study.
    Table(
        "machine.machinerater",
        MachineRater,
        _by(MachineRater, "study"),
        added_in=("machine", "0001_initial"),
    ),
    Table(
        "machine.machinerun",
        MachineRun,
        _by(MachineRun, "rater__study"),
        added_in=("machine", "0001_initial"),
    ),
    Table(
        "machine.machinecall",
        MachineCall,
        _by(MachineCall, "rater__study"),
        added_in=("machine", "0001_initial"),
    ),
    # A screening round's declared plan and rule, each retrain's model record and the audit:
    # what the methods section reports of the screening.
    Table(
        "screening.screeningplan",
        ScreeningPlan,
        _by(ScreeningPlan, "round__study"),
        added_in=("screening", "0001_screening_rounds"),
    ),
    Table(
        "screening.screeningmodel",
        ScreeningModel,
        _by(ScreeningModel, "round__study"),
        added_in=("screening", "0001_screening_rounds"),
    ),
    Table(
        "screening.screeningaudit",
        ScreeningAudit,
        _by(ScreeningAudit, "round__study"),
        json_refs={"order": ((("*",), "studies.item"),)},
        added_in=("screening", "0001_screening_rounds"),
    ),
    # The owners' "duplicate of" / "distinct" decisions on the study's issues, withdrawn ones
    # too (the history: who, when): people's decisions, which no pass can make again.
    Table(
        "similarity.duplicatemark",
        DuplicateMark,
        _by(DuplicateMark, "study"),
        added_in=("similarity", "0002_duplicate_marks_in_backups"),
    ),
    # Export records keep their counts, filters and dataset card; files are not archived (they
    # are derived from the labels and decisions, and can be exported again).
    Table("exports.exportjob", ExportJob, _by(ExportJob, "study"), exclude=("file",)),
    # The study's codes in pseudonymised exports: restored, a later export keeps them.
    Table(
        "exports.pseudonym",
        Pseudonym,
        _by(Pseudonym, "study"),
        added_in=("exports", "0006_export_packages_and_pseudonyms"),
    ),
]

BY_LABEL = {table.label: table for table in TABLES}
BY_MODEL = {table.model: table for table in TABLES}

# Tables that belong to a study's world but are deliberately left out, with the reason.
NOT_ARCHIVED = {
    "backup.backupjob": "the backups themselves: a record of making or restoring an archive",
    "issues.syncstate": "where the GitHub sync of a repository stands: the server's, not a study's",
    "issues.syncjob": "a run of the GitHub sync of a repository: the server's, not a study's",
    "studies.screeningrank": (
        "the latest order of a screening round's unscreened items: derived from the decisions "
        "by the next retrain (the models that made it are archived)"
    ),
    "screening.retrainjob": "a run of the retrain job: its result is the archived model record",
    "agreement.annotatordiagnostics": (
        "per-annotator diagnostics an agreement run derived from the archived labels and "
        "decisions: the diagnostics page recomputes them with a run of the round"
    ),
    "agreement.driftreport": (
        "drift per window an agreement run derived from the archived labels: the drift page "
        "recomputes it with a run of the round"
    ),
    # Near-duplicates (annotator/similarity): groups, pairs, passes and similar issues are
    # computed over the whole shared pool of issues, not a study's, and a pass makes them again.
    "similarity.duplicatepass": "a run of the near-duplicate pass over the shared pool",
    "similarity.duplicategroup": "found by a pass over the shared pool: a pass finds it again",
    "similarity.duplicatemember": "found by a pass over the shared pool: a pass finds it again",
    "similarity.duplicatepair": "found by a pass over the shared pool: a pass finds it again",
    "similarity.similarissues": "computed by a pass over the shared pool: a pass computes it again",
    "issues.issuerevision": (
        "earlier texts of shared issues replaced by imports and syncs: the server's record of "
        "its corpus, not a study's (an archive carries the issues' texts as they are)"
    ),
}


def referenced_labels() -> set[str]:
    """Tables some archived row points to (by foreign key or an id inside JSON): a restore
    keeps the old → new id map of these only."""
    out: set[str] = set()
    for table in TABLES:
        for f in table.fields():
            if f.is_relation and f.related_model in BY_MODEL:
                out.add(BY_MODEL[f.related_model].label)
        for refs in table.json_refs.values():
            out.update(label for _, label in refs)
    return out


def codebook_versions(study: Study) -> set[int]:
    """The study's codebook version, those its annotations, labels (carried over to a later
    version, they may point there), decisions and agreement runs used, and every version these
    lead to: the `based_on` chain, categories' origins, and the categories proposals were
    resolved to (possibly in a later draft). Closed, so no archived reference points outside
    the archive."""
    ids = {study.codebook_version_id}
    used: list[tuple[type[models.Model], str, str]] = [
        (Annotation, "assignment__item__study", "codebook_version_id"),
        (AgreementRun, "study", "codebook_version_id"),
        (AnnotationLabel, "annotation__assignment__item__study", "facet__version_id"),
        (DecisionLabel, "decision__item__study", "facet__version_id"),
        (DISAGREEING, "itemagreement__item__study", "facet__version_id"),
    ]
    for model, path, version in used:
        rows = model._default_manager.filter(**{path: study}).order_by().values_list(version)
        ids |= {v for (v,) in rows.distinct()}
    while True:
        found = set(
            CodebookVersion.objects.filter(pk__in=ids, based_on__isnull=False).values_list(
                "based_on_id", flat=True
            )
        )
        categories = Category.objects.filter(facet__version__in=ids, origin__isnull=False)
        found |= set(categories.values_list("origin__facet__version_id", flat=True))
        proposals = Proposal.objects.filter(facet__version__in=ids)
        for path in ("parent", "resolved_to"):
            found |= set(
                proposals.filter(**{f"{path}__isnull": False}).values_list(
                    f"{path}__facet__version_id", flat=True
                )
            )
        if found <= ids:
            return ids
        ids |= found
