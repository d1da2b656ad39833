"""Near-duplicate groups, the owner's marks on them, and each issue's similar issues.

Groups and neighbours are derived data over the shared issue pool, rewritten by each pass
(`DuplicatePass`); marks are a study's decisions about its issues, kept through later passes
(they name issues, not groups) and never deleted: an undo withdraws a mark, and the history
stays (who, when).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.issues.models import Issue, Repository
from annotator.jobs import Job
from annotator.studies.models import Study


class DuplicatePass(Job):
    """A pass over every issue (or one repository's): near-duplicate groups with their pairwise
    similarities, and each issue's most similar issues."""

    repository = models.ForeignKey(
        Repository, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # The study page the pass was started from (where its page links back to); the pass itself
    # is over the shared pool.
    study = models.ForeignKey(
        Study, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    progress = models.PositiveSmallIntegerField(default=0, help_text="percent")
    # {"duplicates": duplicates.Params.as_dict(), "similar": similar.SimilarParams.as_dict()}
    params = models.JSONField(default=dict, blank=True)
    # {"issues": n, "signatures": n, "pairs": n, "groups": n, "grouped_issues": n,
    #  "seconds": {...}}
    counts = models.JSONField(default=dict, blank=True)

    task_name = "annotator.similarity.tasks.run_duplicate_pass_task"

    class Meta(Job.Meta):
        constraints = [
            models.CheckConstraint(condition=Q(progress__lte=100), name="duplicate_pass_progress")
        ]

    def __str__(self) -> str:
        scope = self.repository.full_name if self.repository_id and self.repository else "all"
        return f"near-duplicate pass {self.pk} ({scope})"


class DuplicateGroup(models.Model):
    """Issues found near-duplicates of one another (a connected set of pairs)."""

    found_by = models.ForeignKey(DuplicatePass, on_delete=models.CASCADE, related_name="groups")
    size = models.PositiveIntegerField()
    max_similarity = models.FloatField()
    min_similarity = models.FloatField()
    issues = models.ManyToManyField(Issue, through="DuplicateMember", related_name="+")

    class Meta:
        ordering = ["-max_similarity", "pk"]

    def __str__(self) -> str:
        return f"group {self.pk} of {self.size} issues"


class DuplicateMember(models.Model):
    group = models.ForeignKey(DuplicateGroup, on_delete=models.CASCADE, related_name="members")
    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="duplicate_members")

    class Meta:
        ordering = ["group_id", "issue_id"]
        constraints = [
            models.UniqueConstraint(fields=["group", "issue"], name="duplicate_member_unique")
        ]

    def __str__(self) -> str:
        return f"#{self.issue_id} in group {self.group_id}"


class DuplicatePair(models.Model):
    """Two issues of a group and how alike they are: the estimated Jaccard similarity of their
    normalised word shingles, and whether they share a traceback's error signature."""

    group = models.ForeignKey(DuplicateGroup, on_delete=models.CASCADE, related_name="pairs")
    issue_a = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="+")
    issue_b = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="+")
    similarity = models.FloatField()
    same_signature = models.BooleanField(default=False)

    class Meta:
        ordering = ["group_id", "-similarity", "issue_a_id", "issue_b_id"]

    def __str__(self) -> str:
        return f"#{self.issue_a_id} ~ #{self.issue_b_id} ({self.similarity:.2f})"


class DuplicateMarkQuerySet(models.QuerySet["DuplicateMark"]):
    def current(self) -> DuplicateMarkQuerySet:
        return self.filter(withdrawn_at__isnull=True)

    def excluding(self) -> DuplicateMarkQuerySet:
        """Current marks that keep their issue out of selections, agreement and counts."""
        return self.current().filter(decision=DuplicateMark.Decision.DUPLICATE, include=False)


class DuplicateMark(models.Model):
    """A study owner's decision on an issue of a group: a duplicate of another issue (kept out
    of the study's selections, agreement and counts unless `include`), or distinct."""

    class Decision(models.TextChoices):
        DUPLICATE = "duplicate", "duplicate"
        DISTINCT = "distinct", "distinct"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="duplicate_marks")
    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="duplicate_marks")
    decision = models.CharField(max_length=10, choices=Decision.choices)
    duplicate_of = models.ForeignKey(
        Issue, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    include = models.BooleanField(
        default=False, help_text="a duplicate counted anyway (include anyway)"
    )
    similarity = models.FloatField(null=True, blank=True, help_text="of the pair when marked")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now_add=True)
    withdrawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    objects = DuplicateMarkQuerySet.as_manager()

    class Meta:
        ordering = ["study_id", "-decided_at", "-pk"]
        constraints = [
            # One current mark per study and issue; withdrawn ones stay as history.
            models.UniqueConstraint(
                fields=["study", "issue"],
                condition=Q(withdrawn_at__isnull=True),
                name="duplicate_mark_one_current",
            ),
            models.CheckConstraint(
                condition=(Q(decision="duplicate", duplicate_of__isnull=False))
                | Q(decision="distinct", duplicate_of__isnull=True, include=False),
                name="duplicate_mark_shape",
            ),
            models.CheckConstraint(
                condition=~Q(issue=models.F("duplicate_of")), name="duplicate_mark_not_itself"
            ),
        ]

    def __str__(self) -> str:
        if self.decision == self.Decision.DISTINCT:
            return f"#{self.issue_id} distinct in {self.study_id}"
        return f"#{self.issue_id} duplicate of #{self.duplicate_of_id} in {self.study_id}"


class SimilarIssues(models.Model):
    """An issue's most similar issues (TF-IDF cosine), best first, from the latest pass over
    it: [[issue id, cosine], …]. One row per issue, so a lookup is one primary-key read."""

    issue = models.OneToOneField(
        Issue, primary_key=True, on_delete=models.CASCADE, related_name="similar_issues"
    )
    neighbours = models.JSONField(default=list)
    found_by = models.ForeignKey(DuplicatePass, on_delete=models.CASCADE, related_name="+")

    class Meta:
        verbose_name_plural = "similar issues"

    def __str__(self) -> str:
        return f"issues similar to #{self.issue_id}"
