"""Codebooks: versions, facets, categories, change operations and proposals.

Imports nothing from annotator: the labels that use a category live elsewhere and are reached
through the hook in taxonomy_app.usage.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse


class Codebook(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("taxonomy:codebook", args=[self.pk])

    def can_edit(self, user: Any) -> bool:
        """Owners edit: the creator, or staff (the seed codebook has no creator)."""
        return bool(user.is_authenticated and (user.is_staff or user.pk == self.created_by_id))

    def latest_published(self) -> CodebookVersion | None:
        return self.versions.filter(status=CodebookVersion.Status.PUBLISHED).first()

    def draft(self) -> CodebookVersion | None:
        return self.versions.filter(status=CodebookVersion.Status.DRAFT).first()


class CodebookVersion(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        PUBLISHED = "published", "published"

    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    # The published version this draft was started from; the diff is taken against it.
    based_on = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    changelog = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["codebook_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["codebook", "number"], name="version_unique_number"),
            models.UniqueConstraint(
                fields=["codebook"], condition=Q(status="draft"), name="version_one_draft"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.codebook} v{self.number} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("taxonomy:version", args=[self.pk])

    @property
    def is_published(self) -> bool:
        return self.status == self.Status.PUBLISHED


class Facet(models.Model):
    class Kind(models.TextChoices):
        SINGLE = "single", "single choice"
        MULTI = "multi", "multiple choice"

    version = models.ForeignKey(CodebookVersion, on_delete=models.CASCADE, related_name="facets")
    key = models.SlugField(max_length=50)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.SINGLE)
    required = models.BooleanField(default=False)
    order = models.PositiveIntegerField(default=0)
    help = models.TextField(blank=True)

    class Meta:
        ordering = ["version_id", "order", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["version", "key"], name="facet_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key})"


class CategoryQuerySet(models.QuerySet["Category"]):
    def active(self) -> CategoryQuerySet:
        return self.filter(archived=False)


class Category(models.Model):
    facet = models.ForeignKey(Facet, on_delete=models.CASCADE, related_name="categories")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    # The category of the previous version this one was copied from: the thread that diffs
    # and label carry-over follow from version to version.
    origin = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="successors"
    )
    code = models.SlugField(max_length=80)
    name = models.CharField(max_length=200)
    definition = models.TextField(blank=True)
    include = models.TextField(blank=True, help_text="what belongs here, and borderline cases")
    exclude = models.TextField(blank=True, help_text="what does not, and where it goes instead")
    examples = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)
    archived = models.BooleanField(default=False)

    objects = CategoryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "categories"
        ordering = ["facet_id", "order", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["facet", "code"], name="category_unique_code"),
            models.CheckConstraint(
                condition=~Q(parent=models.F("pk")), name="category_not_own_parent"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.code})"


class LabelRule(models.Model):
    """A label rule of a version (see taxonomy_app.rules for the kinds). Categories are named by
    code, as in the codebook file; publishing checks that they still fit the version."""

    class Kind(models.TextChoices):
        REQUIRES = "requires", "required when"
        FORBIDS = "forbids", "left empty when"
        LEAF_ONLY = "leaf_only", "leaves only"
        EXCLUSIVE = "exclusive", "mutually exclusive"
        MAX_CHOICES = "max_choices", "at most N choices"

    version = models.ForeignKey(CodebookVersion, on_delete=models.CASCADE, related_name="rules")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    facet = models.ForeignKey(Facet, on_delete=models.CASCADE, related_name="rules")
    when_facet = models.ForeignKey(
        Facet, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    when_categories = models.JSONField(default=list, blank=True)
    categories = models.JSONField(default=list, blank=True)
    max_choices = models.PositiveIntegerField(null=True, blank=True)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["version_id", "order", "pk"]

    def __str__(self) -> str:
        return f"{self.kind} {self.facet_id}"


class ChangeOperation(models.Model):
    """One structural change made in a draft, kept so labels can later follow it mechanically.

    merge: `category` (archived) → `targets[0]`; split: `category` (archived) → `targets`;
    rename/move/archive/add: `category` alone, with old and new values in `detail`.
    """

    class Kind(models.TextChoices):
        ADD = "add", "add"
        RENAME = "rename", "rename"
        MOVE = "move", "move"
        MERGE = "merge", "merge"
        SPLIT = "split", "split"
        ARCHIVE = "archive", "archive"

    version = models.ForeignKey(
        CodebookVersion, on_delete=models.CASCADE, related_name="operations"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices)
    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="operations")
    targets = models.ManyToManyField(Category, blank=True, related_name="+")
    detail = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["version_id", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.kind} {self.category.code}"


class ProposalQuerySet(models.QuerySet["Proposal"]):
    def open(self) -> ProposalQuerySet:
        return self.filter(status=Proposal.Status.OPEN)


class Proposal(models.Model):
    """A category an annotator asks for while labeling (open coding)."""

    class Status(models.TextChoices):
        OPEN = "open", "open"
        ACCEPTED = "accepted", "accepted"
        MAPPED = "mapped", "mapped to an existing category"
        REJECTED = "rejected", "rejected"

    facet = models.ForeignKey(Facet, on_delete=models.CASCADE, related_name="proposals")
    parent = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    name = models.CharField(max_length=200)
    rationale = models.TextField(blank=True)
    # The issue that prompted it, as a URL or OWNER/NAME#N: issues live in another app.
    issue = models.CharField(max_length=300, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    resolved_to = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    reason = models.TextField(blank=True, help_text="why it was rejected or mapped")
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    objects = ProposalQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"proposal {self.name!r} for {self.facet.key} ({self.status})"

    @property
    def issue_url(self) -> str:
        """`issue` when it is a web address (only http and https are ever linked)."""
        return self.issue if self.issue.startswith(("https://", "http://")) else ""
