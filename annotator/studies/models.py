"""Studies: members and roles, rounds, items, assignments, annotations and their labels.

Integrity lives in the database (HOUSE_STYLE 1):
- one assignment per annotator and item: a unique constraint on Assignment(item, annotator);
- at most `quota` (= the study's k, or every annotator in a calibration round) live assignments
  and submitted annotations per item: counters on the Item row, `active_count` and
  `submitted_count`, with CHECK constraints. A CHECK cannot count rows of another table, so
  the services bump the counter with `UPDATE … SET n = n + 1` in the same transaction that
  creates the assignment or submits the annotation; the UPDATE row-locks the item, so concurrent
  writers serialise on it and PostgreSQL refuses the one that would exceed the quota.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from annotator.issues.filter_text import filter_names, filters_in_words
from annotator.issues.models import Issue
from taxonomy_app.models import Category, CodebookVersion, Facet


class Study(models.Model):
    name = models.CharField(max_length=200)
    codebook_version = models.ForeignKey(
        CodebookVersion, on_delete=models.PROTECT, related_name="+"
    )
    overlap_k = models.PositiveSmallIntegerField(
        default=2, help_text="annotators per item (k)", verbose_name="overlap k"
    )
    guidelines = models.TextField(blank=True, help_text="Markdown, shown beside every item")
    # Read by the adjudication app's decision rules (adjudication/sql.py lock_item): with it,
    # an item some annotator marked unsure on a facet waits for a person even when unanimous.
    route_unsure_to_adjudication = models.BooleanField(
        default=True,
        verbose_name="send unsure labels to adjudication",
        help_text="An item where an annotator marked a facet unsure goes to the disagreement "
        "queue even when every annotator chose the same labels (also by majority).",
    )
    # Items with a gold answer (GoldAnswer) are left out of the study's agreement runs unless
    # this is set: they were chosen to teach or to check, not at random.
    gold_in_agreement = models.BooleanField(
        default=False,
        db_default=False,
        verbose_name="count gold items in agreement",
        help_text="Items with a gold answer are left out of agreement runs unless this is set.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at", "-pk"]
        constraints = [models.CheckConstraint(condition=Q(overlap_k__gte=1), name="study_k_gte_1")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("studies:detail", args=[self.pk])


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "owner"
        ADJUDICATOR = "adjudicator", "adjudicator"
        ANNOTATOR = "annotator", "annotator"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_memberships"
    )
    role = models.CharField(max_length=12, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study_id", "role", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="membership_unique_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.study}"

    @property
    def sees_all_labels(self) -> bool:
        """Owners and adjudicators see every label; annotators only their own (blindness)."""
        return self.role in {self.Role.OWNER, self.Role.ADJUDICATOR}

    @property
    def is_owner(self) -> bool:
        return self.role == self.Role.OWNER


def invitation_expiry() -> datetime:
    """When a new invitation link stops working: STUDIES_INVITATION_DAYS from now."""
    return timezone.now() + timedelta(days=settings.STUDIES_INVITATION_DAYS)


class InvitationQuerySet(models.QuerySet["Invitation"]):
    def live(self, now: datetime | None = None) -> InvitationQuerySet:
        """The links that still make members: not revoked, not expired, not used up."""
        return self.filter(
            Q(max_uses__isnull=True) | Q(uses__lt=F("max_uses")),
            revoked_at__isnull=True,
            expires_at__gt=now or timezone.now(),
        )


class Invitation(models.Model):
    """A link that makes whoever opens it (logged in, or signing up on it) a member of the
    study with `role`, until it expires, is revoked or has been used `max_uses` times."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=12, choices=Membership.Role.choices)
    token = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    uses = models.PositiveIntegerField(default=0)
    max_uses = models.PositiveIntegerField(
        null=True, blank=True, help_text="how many people may join by it; empty: no limit"
    )
    expires_at = models.DateTimeField(default=invitation_expiry)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(max_uses__isnull=True) | Q(max_uses__gte=1),
                name="invitation_max_uses_gte_1",
            ),
            # Joining bumps `uses` under the row lock; the database refuses one use too many.
            models.CheckConstraint(
                condition=Q(max_uses__isnull=True) | Q(uses__lte=F("max_uses")),
                name="invitation_uses_within_max",
            ),
        ]

    def __str__(self) -> str:
        return f"invitation to {self.study} as {self.role}"

    def get_absolute_url(self) -> str:
        return reverse("studies:join", args=[self.token])

    @property
    def uses_left(self) -> int | None:
        """How many more people may join by it; None for no limit."""
        return None if self.max_uses is None else max(0, self.max_uses - self.uses)

    def refusal(self, now: datetime | None = None) -> str:
        """Why the link no longer makes members, in words for the page; "" while it does."""
        if self.revoked_at is not None:
            return "This invitation link was revoked by the study's owner."
        if self.expires_at <= (now or timezone.now()):
            return f"This invitation link expired on {self.expires_at:%Y-%m-%d %H:%M} UTC."
        if self.uses_left == 0:
            return "This invitation link has been used as many times as it allows."
        return ""


class Round(models.Model):
    class Kind(models.TextChoices):
        CALIBRATION = "calibration", "calibration (every annotator labels every item)"
        MAIN = "main", "main (k annotators per item)"
        TRAINING = "training", "training (every annotator; the gold answer shown after submitting)"
        # Screening decides which issues are studied at all (the codebook's screening facet);
        # k screeners per item, and an optional prioritised order (annotator/screening).
        SCREENING = "screening", "screening (k screeners per item; may be prioritised)"

    # Kinds in which every annotator labels every item (the quota follows the membership).
    EVERY_ANNOTATOR = (Kind.CALIBRATION, Kind.TRAINING)

    class Closed(models.TextChoices):
        IMPORTED = "imported", "imported from earlier labels"
        COMPLETE = "complete", "complete (every item has its labels)"
        OWNER = "owner", "closed by an owner"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.MAIN)
    created_at = models.DateTimeField(auto_now_add=True)
    # A closed round never changes: no new assignment, no quota change (a new member, a new k),
    # no draft or submit. Set by the prior-label import, by the submit that completes the
    # round's last item, or by an owner (services/studies.py close_round).
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_reason = models.CharField(max_length=10, choices=Closed.choices, blank=True)
    # What the prior-label import that made this round did (annotator/exports/prior.py
    # PriorImportRecord.as_json): source file, the rule for repeated keys, every row skipped or
    # dropped, the values left out per facet and the keys found only in the final sheet. Empty
    # for rounds labelled here. Read by agreement runs and the dataset card.
    prior_import = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["study_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="round_unique_number"),
            models.CheckConstraint(
                condition=Q(closed_at__isnull=True, closed_reason="")
                | (Q(closed_at__isnull=False) & ~Q(closed_reason="")),
                name="round_closed_with_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"round {self.number} ({self.kind})"

    @property
    def is_closed(self) -> bool:
        return self.closed_at is not None


class Selection(models.Model):
    """How issues were added to a study: the record a paper's method section cites."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="selections")
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="selections")
    filters = models.JSONField(default=dict, help_text="the issue filters, as given")
    matched = models.PositiveIntegerField(help_text="issues matching the filters")
    sample_size = models.PositiveIntegerField(null=True, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    stratified_by = models.CharField(max_length=20, blank=True)
    # {"OWNER/NAME": {"matched": n, "sampled": n}} per stratum
    strata = models.JSONField(default=dict, blank=True)
    sampled = models.PositiveIntegerField(help_text="issues kept after sampling")
    added = models.PositiveIntegerField(help_text="issues new to the study")
    repeat_issues = models.BooleanField(
        default=False, help_text="issues already in other rounds of the study were candidates"
    )
    # Reliability on a sample: this share (percent) of the selected items, drawn with its own
    # seed and stratified by repository, goes to k annotators; the rest to one.
    # None: every item at k. {"OWNER/NAME": {"items": n, "double": n}} per stratum.
    reliability_share = models.PositiveSmallIntegerField(null=True, blank=True)
    reliability_seed = models.BigIntegerField(null=True, blank=True)
    reliability_strata = models.JSONField(default=dict, blank=True)
    # Where the candidates came from when not from the whole corpus: the issues a screening
    # round included, {"screening_round": n, "included": n, "take": "all" | "random sample"}
    # (annotator/screening/services.py select_included). Empty for a filter selection.
    source = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study_id", "created_at", "pk"]

    def __str__(self) -> str:
        return f"selection of {self.added} issues for {self.study}"

    @cached_property
    def _filter_names(self) -> dict[str, dict[str, str]]:
        return filter_names([self.filters])

    @property
    def filters_text(self) -> str:
        """The stored filters for people: a repository by its owner/name, not its id."""
        return filters_in_words(self.filters, self._filter_names, quote=False) or "none"

    @property
    def method_text(self) -> str:
        """The selection in words, for a paper's method section."""
        filters = filters_in_words(self.filters, self._filter_names)
        where = f"round {self.round.number}" if self.repeat_issues else "the study"
        text = f"Issues matching {filters or 'no filter'}, not already in {where}: {self.matched}."
        if self.source.get("screening_round"):
            text = (
                f"Issues included by screening round {self.source['screening_round']}"
                f" ({self.source.get('included', self.matched)}), not already in {where}:"
                f" {self.matched}; taken {self.source.get('take', 'all')}, never in the"
                " screening model's order."
            )
        if self.sample_size is not None:
            how = (
                "stratified by repository (proportional allocation, largest remainder)"
                if self.stratified_by
                else "simple random sample"
            )
            text += f" Sample of {self.sample_size} requested, {how}, seed {self.seed}:"
            text += f" {self.sampled} issues."
        parts = ", ".join(
            f"{name} {counts['sampled']}/{counts['matched']}"
            for name, counts in self.strata.items()
        )
        text = f"{text} Per repository (kept/matched): {parts or 'none'}."
        if self.reliability_share is not None:
            double = sum(c["double"] for c in self.reliability_strata.values())
            text += (
                f" Reliability sample: {self.reliability_share}% of the {self.sampled} items"
                f" ({double}), stratified by repository, seed {self.reliability_seed}, labelled"
                f" by k annotators each; the other {self.sampled - double} by one."
            )
        return text


class ItemQuerySet(models.QuerySet["Item"]):
    def with_state(self) -> ItemQuerySet:
        return self.annotate(
            state=models.Case(
                models.When(submitted_count__gte=F("quota"), then=models.Value("complete")),
                models.When(active_count__gt=0, then=models.Value("in progress")),
                default=models.Value("unassigned"),
            )
        )


class Item(models.Model):
    """An issue in a study and round, with the counters that bound its assignments."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="items")
    issue = models.ForeignKey(Issue, on_delete=models.PROTECT, related_name="study_items")
    # The item's place in the labeling order: a seeded shuffle, so no repository or date
    # clusters at the front.
    position = models.PositiveIntegerField(default=0)
    quota = models.PositiveSmallIntegerField(help_text="annotators this item needs")
    # Where the item's round stands in the labeling order: 0 for training and calibration rounds,
    # handed out before any main round's items whenever they were added (annotators learn the
    # codebook first), 1 for main rounds. Set with the item (services/selection.py); a round's
    # kind changes only while it is empty.
    stage = models.PositiveSmallIntegerField(default=1, db_default=1)
    # False for the items of a sampled round left out of its reliability sample: one annotator
    # labels them (quota 1) whatever k is, and they carry no agreement.
    reliability_sample = models.BooleanField(default=True, db_default=True)
    active_count = models.PositiveSmallIntegerField(default=0, help_text="assigned or submitted")
    submitted_count = models.PositiveSmallIntegerField(default=0)
    # Set by the owner to open the item for discussion (adjudication); until then annotators
    # see only their own labels.
    released_at = models.DateTimeField(null=True, blank=True)

    objects = ItemQuerySet.as_manager()

    class Meta:
        ordering = ["round_id", "position", "pk"]
        constraints = [
            # One item per issue and round: an issue may come back in a later round of the
            # study (a second calibration, an imported round sharing issues with another).
            models.UniqueConstraint(fields=["round", "issue"], name="item_unique_issue_in_round"),
            models.CheckConstraint(
                condition=Q(active_count__lte=F("quota")), name="item_active_within_quota"
            ),
            models.CheckConstraint(
                condition=Q(submitted_count__lte=F("active_count")),
                name="item_submitted_within_active",
            ),
        ]
        indexes = [
            # next_assignment's order (services/assignment.py; training and calibration rounds
            # first, then by round), over the items with a free
            # slot only: full items leave it, so the scan for the next item does not pass over
            # every complete item (they sort first, breadth first) as the study progresses.
            models.Index(
                "stage",
                "round",
                F("submitted_count").desc(),
                F("active_count").desc(),
                "position",
                name="item_pool",
                condition=Q(active_count__lt=F("quota")),
            ),
            # "is the round complete?", asked after every submit that completes an item
            # (agreement/services.py): one probe of the round's incomplete items, however
            # many are complete.
            models.Index(
                fields=["round"],
                name="item_incomplete",
                condition=Q(submitted_count__lt=F("quota")),
            ),
            # Its complement, the round's complete items: a screening round's panel reads its
            # screened items (5,000 of 100,000 candidates) without passing over the rest
            # (annotator/screening/sql.py screened_rows).
            models.Index(
                fields=["round"],
                name="item_complete",
                condition=Q(submitted_count__gte=F("quota")),
            ),
            # A study's items in the default order: a list through the items of one study
            # (the decisions API, ordered by item) reads its first page from here instead of
            # sorting the study's 100,000 items.
            models.Index(fields=["study", "round", "position", "id"], name="item_study_order"),
        ]

    def __str__(self) -> str:
        return f"item {self.pk} ({self.issue_id}) of {self.study_id}"

    def get_absolute_url(self) -> str:
        return reverse("studies:item", args=[self.pk])

    @property
    def released(self) -> bool:
        return self.released_at is not None


class Assignment(models.Model):
    class Status(models.TextChoices):
        ASSIGNED = "assigned", "in progress"
        SUBMITTED = "submitted", "submitted"
        SKIPPED = "skipped", "skipped"
        EXPIRED = "expired", "timed out"

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ASSIGNED)
    skip_reason = models.CharField(max_length=300, blank=True)
    assigned_at = models.DateTimeField(auto_now_add=True)
    # Last sign of work (open, draft save); the timeout counts from here.
    touched_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # In a prioritised screening round: the item's rank (1 = most likely relevant, or the
    # audit's draw order) in the table of ranks when it was handed out; None elsewhere, and
    # while the round's order is still the seeded random one (no model trained yet).
    screening_rank = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["assigned_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="assignment_unique_pair"),
        ]
        indexes = [
            models.Index(fields=["annotator", "status"], name="assignment_annotator"),
            # My items: an annotator's history newest first, a page at a time, without sorting
            # their whole history (100,000 assignments in a large study).
            models.Index(fields=["annotator", "-assigned_at", "-id"], name="assignment_history"),
            models.Index(
                fields=["touched_at"], condition=Q(status="assigned"), name="assignment_stale"
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} of item {self.item_id} to {self.annotator_id}"

    def get_absolute_url(self) -> str:
        return reverse("studies:assignment", args=[self.pk])

    @property
    def changed_since_labeled(self) -> bool:
        """The issue changed (a GitHub sync) after this assignment's labels were submitted."""
        annotation = getattr(self, "annotation", None)
        changed = self.item.issue.changed_at
        submitted = annotation.submitted_at if annotation is not None else None
        return bool(changed and submitted and changed > submitted)


class ScreeningRank(models.Model):
    """The latest order of a prioritised screening round's unscreened items: rank 1 first.

    Written whole, in one statement, by the screening app's retrain job and by an audit draw
    (annotator/screening/sql.py write_ranks); read by next_assignment (studies/sql.py
    top_ranked_item) once the item it would hand out otherwise is a fresh item of the round.
    It lives here, beside Item, because the hand-out reads it and studies imports no other
    app that owns it. A round without rows is handed out in its seeded random order."""

    item = models.OneToOneField(
        Item, on_delete=models.CASCADE, primary_key=True, related_name="screening_rank"
    )
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()

    class Meta:
        ordering = ["round_id", "rank"]
        indexes = [models.Index(fields=["round", "rank"], name="screening_rank_order")]

    def __str__(self) -> str:
        return f"rank {self.rank} of item {self.item_id}"


class AnnotationQuerySet(models.QuerySet["Annotation"]):
    def visible_to(self, user: Any, membership: Membership | None) -> AnnotationQuerySet:
        """The blindness rule: owners and adjudicators see all; anyone else sees their own, and
        others' only on items released for discussion once their own is submitted."""
        if membership is not None and membership.sees_all_labels:
            return self
        mine = Q(assignment__annotator=user)
        own_submitted = Assignment.objects.filter(
            item=models.OuterRef("assignment__item"),
            annotator=user,
            status=Assignment.Status.SUBMITTED,
        )
        released = Q(assignment__item__released_at__isnull=False) & Q(models.Exists(own_submitted))
        return self.filter(mine | (released & Q(status=Annotation.Status.SUBMITTED)))


class Annotation(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        SUBMITTED = "submitted", "submitted"

    assignment = models.OneToOneField(
        Assignment, on_delete=models.CASCADE, related_name="annotation"
    )
    codebook_version = models.ForeignKey(
        CodebookVersion, on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    seconds_spent = models.PositiveIntegerField(default=0)
    notes = models.TextField(blank=True)
    # The keys of the facets the annotator marked unsure (chosen or not), in the codebook's
    # order. A list on the row rather than a table of its own: a backup made before it restores
    # with the default (annotator/backup/schema.py), where a new table would be refused.
    unsure = models.JSONField(default=list, blank=True)
    # What the annotator submitted after the item was released for discussion, beside the blind
    # labels (the AnnotationLabel rows, which stay as first submitted and are what agreement,
    # the queue, decisions and exports read): {"labels": {facet key: [codes]}, "unsure": [keys],
    # "notes": text, "at": ISO time, "count": revisions so far}; None until then. Codes, not
    # ids, and on the row for the same reason as `unsure`: a backup made before it restores.
    revision = models.JSONField(null=True, blank=True, default=None)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    objects = AnnotationQuerySet.as_manager()

    class Meta:
        ordering = ["assignment_id"]
        indexes = [
            # The newest annotation change, read in one index probe: part of the fingerprint
            # under which the dashboard caches its annotators' table (services/progress.py).
            models.Index(fields=["updated_at"], name="annotation_updated"),
        ]

    def __str__(self) -> str:
        return f"annotation {self.pk} ({self.status})"


class GoldAnswer(models.Model):
    """The answer an owner set for an item: what a training round shows each annotator right
    after they submit (never before), and what their accuracy is measured against.

    Labels as {facet key: [category codes]} of the study's codebook version, as on
    `Annotation.revision`: codes, not ids, so the answer reads the same in a backup."""

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="gold")
    labels = models.JSONField(default=dict)
    rationale = models.TextField(blank=True)
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item_id"]

    def __str__(self) -> str:
        return f"gold answer of item {self.item_id}"


class AnnotationLabel(models.Model):
    """One category chosen in one facet; a multi-choice facet holds several rows."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="labels")
    facet = models.ForeignKey(Facet, on_delete=models.PROTECT, related_name="+")
    category = models.ForeignKey(Category, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["annotation_id", "facet_id", "category_id"]
        constraints = [
            models.UniqueConstraint(fields=["annotation", "category"], name="label_unique"),
        ]
        indexes = [models.Index(fields=["category"], name="label_category")]

    def __str__(self) -> str:
        return f"label {self.category_id} on {self.annotation_id}"
