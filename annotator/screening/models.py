"""Screening rounds: the declared plan, each retrain's model record, the retrain job and the
random audit of the unscreened pool.

A screening round is a `Round` of kind "screening" (studies); its items are handed out by
studies' next_assignment, k screeners each, breadth first, in the order of the table of ranks
(`studies.ScreeningRank`, written by the retrain job) once it has one, else in the round's
seeded random order.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.jobs import Job
from annotator.studies.models import Round
from taxonomy_app.models import Category

# ranking.MODELS, written out: importing ranking here would load scikit-learn into every web
# process (tests/screening/test_round.py holds the two equal).
MODELS = ("tfidf-svm", "tfidf-logreg", "random")
DEFAULT_MODEL = "tfidf-svm"


class ScreeningPlan(models.Model):
    """What a screening round declares before its first decision: which category means
    "relevant", whether the order is prioritised (and by which model, seed and retrain
    interval), and the stopping rule (target recall, alpha, looks), time-stamped. Once the
    round has a decision the rule no longer changes (services.declare_screening)."""

    round = models.OneToOneField(Round, on_delete=models.CASCADE, related_name="screening_plan")
    relevant_category = models.ForeignKey(Category, on_delete=models.PROTECT, related_name="+")
    prioritised = models.BooleanField(default=True)
    model = models.CharField(max_length=20, default=DEFAULT_MODEL, choices=[(m, m) for m in MODELS])
    seed = models.BigIntegerField(default=0)
    retrain_every = models.PositiveSmallIntegerField(
        default=10, help_text="decisions (submitted screenings) between retrains"
    )
    target_recall = models.FloatField(default=0.95)
    alpha = models.FloatField(default=0.05)
    looks = models.PositiveSmallIntegerField(
        default=1, help_text="declared readings of the test, each at alpha / looks"
    )
    declared_at = models.DateTimeField()
    declared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The round's decision count when the last retrain was asked for (after every N).
    decisions_at_last_retrain = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(target_recall__gt=0, target_recall__lt=1),
                name="screening_target_in_0_1",
            ),
            models.CheckConstraint(
                condition=Q(alpha__gt=0, alpha__lt=1), name="screening_alpha_in_0_1"
            ),
            models.CheckConstraint(condition=Q(looks__gte=1), name="screening_looks_gte_1"),
            models.CheckConstraint(
                condition=Q(retrain_every__gte=1), name="screening_retrain_every_gte_1"
            ),
        ]

    def __str__(self) -> str:
        return f"screening plan of {self.round}"

    @property
    def rule_text(self) -> str:
        return (
            f"stop when a random audit of the unscreened pool rejects 'recall < "
            f"{self.target_recall:.0%}' at p < {self.alpha:g} (Callaghan & Müller-Hansen 2020; "
            f"{self.looks} declared look{'s' if self.looks != 1 else ''}, each at "
            f"{self.alpha / self.looks:.3g})"
        )


class ScreeningModel(models.Model):
    """One retrain of a prioritised round: everything needed to reproduce its ranking."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="screening_models")
    version = models.PositiveIntegerField()
    model = models.CharField(max_length=20)
    params = models.JSONField(default=dict)
    seed = models.BigIntegerField()
    # sha256 over the training decisions (item id:label, in item order).
    training_hash = models.CharField(max_length=64)
    vocabulary_size = models.PositiveIntegerField(default=0)
    n_items = models.PositiveIntegerField(default=0)
    n_relevant = models.PositiveIntegerField(default=0)
    n_irrelevant = models.PositiveIntegerField(default=0)
    n_ranked = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0)
    # {"features": "cached" | "fitted", "features_seconds": s, "train_rank_seconds": s, ...}
    metrics = models.JSONField(default=dict, blank=True)
    trained_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["round_id", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["round", "version"], name="screening_model_version")
        ]

    def __str__(self) -> str:
        return f"screening model {self.version} of {self.round}"


class RetrainJob(Job):
    """A retrain of a prioritised round's model and the rewrite of its ranks."""

    class Reason(models.TextChoices):
        DECISIONS = "decisions", "after N decisions"
        OWNER = "owner", "asked for by an owner"

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="retrain_jobs")
    reason = models.CharField(max_length=10, choices=Reason.choices)
    progress = models.PositiveSmallIntegerField(default=0, help_text="percent")
    screening_model = models.ForeignKey(
        ScreeningModel, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    task_name = "annotator.screening.tasks.retrain_task"
    lost_outcome = "the ranks stay those of the previous model"

    class Meta(Job.Meta):
        constraints = [
            models.CheckConstraint(
                condition=Q(progress__lte=100), name="screening_progress_le_100"
            ),
        ]

    def __str__(self) -> str:
        return f"retrain {self.pk} of {self.round}"


class ScreeningAudit(models.Model):
    """The random audit of a screening round's unscreened pool (Callaghan & Müller-Hansen):
    the pool as it was when drawn (`order`: its item ids in the seeded random order), the
    relevant items found before, and how many of the order are in the audit (`size`: an
    owner may extend it; the audit is always a prefix of the seeded order, so a simple random
    sample). Audit items are handed out first, in that order, k screeners each."""

    round = models.OneToOneField(Round, on_delete=models.CASCADE, related_name="screening_audit")
    seed = models.BigIntegerField()
    pool_size = models.PositiveIntegerField()
    relevant_before = models.PositiveIntegerField()
    screened_before = models.PositiveIntegerField()
    order = models.JSONField(default=list)
    size = models.PositiveIntegerField()
    drawn_at = models.DateTimeField(auto_now_add=True)
    drawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(size__gte=1) & Q(size__lte=models.F("pool_size")),
                name="screening_audit_size_in_pool",
            )
        ]

    def __str__(self) -> str:
        return f"audit of {self.size} from {self.pool_size} in {self.round}"

    @property
    def item_ids(self) -> list[int]:
        return [int(pk) for pk in self.order[: self.size]]
