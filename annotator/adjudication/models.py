"""Adjudication: per-item agreement (the queue's order), decisions, discussion, the audit trail.

Rules that the database holds (HOUSE_STYLE 1): one decision per item (a one-to-one), one
agreement row per item, a decision label once per category. The optimistic lock is the
`version` column, bumped by `UPDATE … WHERE version = seen` in services/decisions.py.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.studies.models import Annotation, Item, Study
from taxonomy_app.models import Category, Facet


class AdjudicationSettings(models.Model):
    """A study's decision rules (the Study model belongs to another app)."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="adjudication")
    majority_rule = models.BooleanField(
        default=False,
        help_text="with k ≥ 3, decide an item automatically where more than half agree on "
        "every facet",
    )
    # Blind adjudication (annotator/adjudication/blind.py): until an item has a decision, its
    # annotators read as "Annotator A", "Annotator B"… on every adjudication page and API.
    blind = models.BooleanField(
        default=False,
        help_text="show the annotators as Annotator A, B, C… until the item is decided",
    )
    fast_label_seconds = models.PositiveIntegerField(
        default=0,
        help_text="flag labels given in fewer seconds than this on the adjudicate page (0: off)",
    )

    class Meta:
        verbose_name_plural = "adjudication settings"

    def __str__(self) -> str:
        return f"adjudication settings of {self.study_id}"


class ItemAgreementQuerySet(models.QuerySet["ItemAgreement"]):
    def undecided(self) -> ItemAgreementQuerySet:
        """The disagreement queue: complete items no rule or person has decided yet.

        NOT EXISTS rather than a LEFT JOIN … IS NULL: PostgreSQL plans the former as an anti
        join and estimates how many rows it keeps (2,411 of 100,000 in benchmarks/page_scale.py),
        where it took the latter to keep one row and so joined and sorted every undecided item
        of the study to find the first (adjudication:next, 200 to 570 ms at 100,000 items)."""
        return self.filter(~models.Exists(Decision.objects.filter(item=models.OuterRef("item"))))


class ItemAgreement(models.Model):
    """How far an item's k submitted annotations agree, computed when the last one arrives:
    the mean over facets of the pairwise agreement 1 - MASI distance (p_o for a single-choice
    facet). The queue is ordered by it, lowest first."""

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="agreement")
    value = models.FloatField()
    disagreeing_facets = models.ManyToManyField(Facet, blank=True, related_name="+")
    # Keys of the facets some annotator marked unsure, in the codebook's order: why an item
    # the annotators agree on waits in the queue (Study.route_unsure_to_adjudication).
    unsure_facets = models.JSONField(default=list, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    objects = ItemAgreementQuerySet.as_manager()

    class Meta:
        ordering = ["value", "item_id"]
        indexes = [
            # the newest computation, read by the analytics' fingerprint (analytics.py)
            models.Index(fields=["computed_at"], name="item_agreement_computed"),
            # the queue's first key: the next item (services/queue.next_in_queue) is read by
            # walking the lowest agreements until an undecided one, not by sorting the study
            models.Index(fields=["value"], name="item_agreement_value"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(value__gte=0) & Q(value__lte=1), name="item_agreement_0_1"
            )
        ]

    def __str__(self) -> str:
        return f"agreement {self.value:.2f} on item {self.item_id}"


class Decision(models.Model):
    class Source(models.TextChoices):
        UNANIMOUS = "unanimous", "unanimous"
        MAJORITY = "majority", "majority"
        ADJUDICATED = "adjudicated", "adjudicated"
        IMPORTED = "imported", "imported"
        # One annotation by design: an item of a sampled round outside its reliability sample
        # (or a study with k = 1). Never "unanimous": nobody was there to disagree.
        SINGLE = "single", "single annotator"

    class Reason(models.TextChoices):
        GUIDELINE_GAP = "guideline-gap", "guideline gap"
        AMBIGUOUS_REPORT = "ambiguous-report", "ambiguous report"
        ANNOTATOR_SLIP = "annotator-slip", "annotator slip"
        CODEBOOK_CHANGE = "codebook-change", "codebook change needed"
        OTHER = "other", "other"

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="decision")
    source = models.CharField(max_length=12, choices=Source.choices)
    reason = models.CharField(max_length=20, choices=Reason.choices, blank=True)
    comment = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Confidence(models.IntegerChoices):
        LOW = 1, "low"
        MEDIUM = 2, "medium"
        HIGH = 3, "high"

    # How sure the adjudicator was (adjudicated decisions; optional).
    confidence = models.PositiveSmallIntegerField(choices=Confidence.choices, null=True, blank=True)
    # Optimistic lock: a save names the version it saw; the first of two concurrent saves wins.
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item_id"]
        # the newest change, read by the analytics' fingerprint (analytics.py)
        indexes = [models.Index(fields=["updated_at"], name="decision_updated")]
        constraints = [
            models.CheckConstraint(
                condition=~Q(source="adjudicated") | ~Q(reason=""),
                name="decision_adjudicated_has_reason",
            )
        ]

    def __str__(self) -> str:
        return f"decision on item {self.item_id} ({self.source})"

    @property
    def is_automatic(self) -> bool:
        return self.source in {self.Source.UNANIMOUS, self.Source.MAJORITY, self.Source.SINGLE}


class DecisionLabel(models.Model):
    """One final category in one facet; a multi-choice facet has several rows."""

    decision = models.ForeignKey(Decision, on_delete=models.CASCADE, related_name="labels")
    facet = models.ForeignKey(Facet, on_delete=models.PROTECT, related_name="+")
    category = models.ForeignKey(Category, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["decision_id", "facet_id", "category_id"]
        constraints = [
            models.UniqueConstraint(fields=["decision", "category"], name="decision_label_unique")
        ]
        indexes = [models.Index(fields=["category"], name="decision_label_category")]

    def __str__(self) -> str:
        return f"final label {self.category_id} on {self.decision_id}"


class Comment(models.Model):
    """A message in an item's discussion thread (Markdown, rendered sanitized)."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_id", "created_at", "pk"]

    def __str__(self) -> str:
        return f"comment {self.pk} on item {self.item_id}"


class Change(models.Model):
    """One change to an annotation or a decision: who, when, the state before and after
    (labels as {facet key: [category code]}, plus status, notes or source, reason, comment).
    Written by services/history.record_change, never by a signal."""

    class Subject(models.TextChoices):
        ANNOTATION = "annotation", "annotation"
        DECISION = "decision", "decision"

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="changes")
    subject = models.CharField(max_length=10, choices=Subject.choices)
    annotation = models.ForeignKey(
        Annotation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    at = models.DateTimeField(auto_now_add=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["item_id", "at", "pk"]
        indexes = [models.Index(fields=["annotation", "-at"], name="change_annotation_latest")]

    def __str__(self) -> str:
        return f"{self.subject} change on item {self.item_id}"
