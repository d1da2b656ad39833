# ruff: noqa: RUF001, RUF002, RUF003 -- α, κ and × are the notation of the statistics.
"""Agreement runs (a Celery job computing every facet's agreement), the study's threshold and
the rounds that passed calibration.

The statistics are in `stats.py` (pure); `summary.py` turns a label table into the stored
result; `services.py` reads the labels from PostgreSQL and writes the run.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection, models
from django.db.models import F, Q
from django.urls import reverse

from annotator.jobs import Job
from annotator.studies.models import Round, Study
from taxonomy_app.models import CodebookVersion

DEFAULT_THRESHOLD = 0.8


class AgreementSettings(models.Model):
    """Per-study agreement settings, kept here so the studies app needs no field for them."""

    study = models.OneToOneField(
        Study, on_delete=models.CASCADE, primary_key=True, related_name="agreement_settings"
    )
    threshold = models.FloatField(
        default=DEFAULT_THRESHOLD,
        help_text="Krippendorff's α every facet must reach for a round to pass calibration",
    )

    class Meta:
        verbose_name_plural = "agreement settings"
        constraints = [
            models.CheckConstraint(
                condition=Q(threshold__gte=0) & Q(threshold__lte=1), name="agreement_threshold_0_1"
            )
        ]

    def __str__(self) -> str:
        return f"agreement settings of {self.study_id}"


class AgreementRunQuerySet(models.QuerySet["AgreementRun"]):
    def succeeded(self) -> AgreementRunQuerySet:
        return self.filter(status=Job.Status.SUCCEEDED)

    def latest_per_round(self) -> list[AgreementRun]:
        """The newest succeeded run of each round (and of "all rounds"), oldest round first."""
        ordered = self.succeeded().order_by("round__number", "-created_at", "-pk")
        if connection.vendor == "postgresql":
            return list(ordered.distinct("round__number").select_related("round"))
        # SQLite (the embedded demo) has no DISTINCT ON: ids first, then only the runs shown,
        # whose results can be large.
        newest: dict[int | None, int] = {}
        for pk, round_id in ordered.values_list("pk", "round_id"):
            newest.setdefault(round_id, pk)
        chosen = self.model.objects.filter(pk__in=newest.values()).select_related("round")
        return list(chosen.order_by(F("round__number").asc(nulls_last=True)))


class AgreementRun(Job):
    """One computation of agreement for a study, a round of it or all its rounds.

    `result` is written once, at the end, in the same UPDATE that marks the run succeeded: a
    failed or killed run never has a partial result. `inputs` records what reproduces it.
    """

    class Trigger(models.TextChoices):
        PAGE = "page", "report page"
        API = "api", "API"
        COMMAND = "command", "manage.py compute_agreement"
        ROUND_COMPLETE = "round_complete", "round completed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="agreement_runs")
    round = models.ForeignKey(
        Round,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="agreement_runs",
        help_text="empty: every round of the study",
    )
    facets = models.JSONField(default=list, blank=True, help_text="facet keys; empty: all")
    codebook_version = models.ForeignKey(
        CodebookVersion, on_delete=models.PROTECT, related_name="+"
    )
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.PAGE)
    progress = models.PositiveSmallIntegerField(default=0, help_text="percent")
    inputs = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)

    objects = AgreementRunQuerySet.as_manager()

    task_name = "annotator.agreement.tasks.run_agreement_task"

    class Meta(Job.Meta):
        indexes = [
            models.Index(fields=["study", "round", "-created_at"], name="agreement_run_scope")
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(result__isnull=True) | Q(status=Job.Status.SUCCEEDED),
                name="agreement_result_only_when_succeeded",
            ),
            models.CheckConstraint(
                condition=Q(progress__lte=100), name="agreement_progress_le_100"
            ),
        ]

    def __str__(self) -> str:
        scope = f"round {self.round.number}" if self.round_id and self.round else "all rounds"
        return f"agreement run {self.pk} of {self.study_id}, {scope} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("agreement:run", args=[self.pk])

    @property
    def scope(self) -> str:
        return f"round {self.round.number}" if self.round is not None else "all rounds"

    def facet_result(self, key: str) -> dict[str, Any] | None:
        facets = (self.result or {}).get("facets", [])
        return next((f for f in facets if f["key"] == key), None)


class AnnotatorDiagnostics(models.Model):
    """The per-annotator diagnostics of one round (`annotators_service`), computed by an
    agreement run of that round over every facet and stored with it: the diagnostics page and
    API read them with the run's time instead of recomputing the round per view."""

    run = models.OneToOneField(
        AgreementRun,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="annotator_diagnostics",
    )
    report = models.JSONField(help_text="the figures, as annotators.round_diagnostics gives them")
    seconds = models.FloatField(default=0, help_text="time to read and compute them")

    class Meta:
        verbose_name_plural = "annotator diagnostics"

    def __str__(self) -> str:
        return f"annotator diagnostics of agreement run {self.run_id}"


class DriftReport(models.Model):
    """Drift within one round (`drift_service`) at the default window, computed by an
    agreement run of that round over every facet and stored with it: the figures per window,
    not yet judged against the threshold (the page judges them against the study's threshold
    of the moment). The drift page and API read them with the run's time; a round of 10,000
    items takes seconds to compute, so no view does it at that window."""

    run = models.OneToOneField(
        AgreementRun, on_delete=models.CASCADE, primary_key=True, related_name="drift_report"
    )
    window = models.PositiveIntegerField(help_text="pairable items per window")
    report = models.JSONField(help_text="the figures, as drift.drift_figures gives them")
    seconds = models.FloatField(default=0, help_text="time to read and compute them")

    def __str__(self) -> str:
        return f"drift of agreement run {self.run_id} (windows of {self.window})"


class CalibrationPass(models.Model):
    """A round marked "passed calibration": its run met the study's threshold on every facet,
    judged on the lower bound of each facet's 95% interval (`threshold.calibration_verdict`).

    The database refuses a pass whose lowest α, or whose lowest lower bound, is below the
    threshold recorded with it. Passes recorded before the lower bound was the rule have no
    `lowest_ci_low` (they were judged on the point estimate).
    """

    round = models.OneToOneField(Round, on_delete=models.CASCADE, related_name="calibration_pass")
    run = models.ForeignKey(AgreementRun, on_delete=models.PROTECT, related_name="+")
    threshold = models.FloatField()
    lowest_alpha = models.FloatField(help_text="the lowest facet α of the run")
    lowest_ci_low = models.FloatField(
        null=True,
        blank=True,
        help_text="the lowest lower bound of the facets' 95% intervals, the figure judged; "
        "empty on passes judged on the point estimate",
    )
    passed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    passed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(lowest_alpha__gte=F("threshold")), name="calibration_meets_threshold"
            ),
            models.CheckConstraint(
                condition=Q(lowest_ci_low__isnull=True) | Q(lowest_ci_low__gte=F("threshold")),
                name="calibration_lower_bound_meets_threshold",
            ),
        ]

    def __str__(self) -> str:
        return f"round {self.round_id} passed calibration (α ≥ {self.threshold})"


class HeadlineDeclaration(models.Model):
    """The reliability figure a study will report, declared by its owner before the main
    round: one coefficient, the facets it is reported for, and the threshold they must reach.
    Rows are never edited: a change is a new row with its reason, the earlier ones kept beside
    it, so the report and the dataset card show what was declared first and when it changed
    (the Empirical Standards' antipattern is reporting only the most favourable coefficient).
    annotator/agreement/headline.py declares and describes them."""

    class Coefficient(models.TextChoices):
        KRIPPENDORFF_ALPHA = "krippendorff_alpha", "Krippendorff's α"
        FLEISS_KAPPA = "fleiss_kappa", "Fleiss' κ"
        GWET_AC1 = "gwet_ac1", "Gwet's AC1"
        PERCENT_AGREEMENT = "percent_agreement", "percent agreement"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="headlines")
    coefficient = models.CharField(max_length=32, choices=Coefficient.choices)
    facets = models.JSONField(help_text="keys of the facets the headline is reported for")
    threshold = models.FloatField()
    reason = models.TextField(blank=True, help_text="why it changed (a change only)")
    declared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    declared_at = models.DateTimeField(auto_now_add=True)
    # Whether a main round of the study already had a submitted label when this was declared.
    after_labeling_started = models.BooleanField(default=False)

    class Meta:
        ordering = ["study_id", "declared_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(threshold__gte=0) & Q(threshold__lte=1), name="headline_threshold_0_1"
            )
        ]

    def __str__(self) -> str:
        return f"headline of study {self.study_id}: {self.coefficient} ≥ {self.threshold}"
