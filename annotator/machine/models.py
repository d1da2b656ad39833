"""Machine raters, their runs and every call they made.

Machine labels live here, apart from the human annotations (annotator.studies): they are never
an Assignment, never count toward an item's k, and no page or API route of the studies app reads
them. A call's labels are {facet key: [codes]} of the study's codebook version, as a gold answer
or a revision: codes, not ids.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.jobs import Job
from annotator.studies.models import Item, Round, Study


class MachineRater(models.Model):
    """A model declared as a rater of a study: where it is reached, which model, with which
    parameters, how many samples per item, and the version of the prompt template."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="machine_raters")
    name = models.CharField(max_length=100)
    # Empty: the server's LLM_BASE_URL. The API key is never stored: LLM_API_KEY.
    base_url = models.URLField(max_length=500, blank=True)
    model = models.CharField(max_length=200)
    # Sent with every call: temperature, top_p, max_tokens, seed (those given).
    parameters = models.JSONField(default=dict, blank=True)
    samples = models.PositiveSmallIntegerField(default=1, help_text="answers per item (k)")
    prompt_version = models.CharField(max_length=20)
    # The issue thread is cut to this many tokens (estimated as characters / 4) by the rule in
    # prompt.py, recorded with each call.
    token_budget = models.PositiveIntegerField(default=6000)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="machine_rater_unique_name"),
            models.CheckConstraint(condition=Q(samples__gte=1), name="machine_rater_samples"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.model}) of {self.study}"


class MachineRun(Job):
    """A run of a rater over a round (all its items or a seeded sample). Calls are kept as they
    are answered, each a complete record: a run killed midway resumes without asking again for
    the items already answered (`run_machine_run` skips them)."""

    rater = models.ForeignKey(MachineRater, on_delete=models.CASCADE, related_name="runs")
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="machine_runs")
    sample_size = models.PositiveIntegerField(null=True, blank=True, help_text="empty: all")
    seed = models.BigIntegerField(null=True, blank=True)
    progress = models.PositiveSmallIntegerField(default=0, help_text="percent")
    # {"items": n, "labeled": n, "invalid": n, "failed": n, "skipped": n (answered before)}
    counts = models.JSONField(default=dict, blank=True)

    task_name = "annotator.machine.tasks.run_machine_task"
    lost_outcome = "the calls it had answered are kept; starting it again asks only for the rest"

    class Meta(Job.Meta):
        constraints = [
            models.CheckConstraint(condition=Q(progress__lte=100), name="machine_progress_le_100")
        ]

    def __str__(self) -> str:
        return f"machine run {self.pk} of {self.rater}"


class MachineCall(models.Model):
    """One chat-completions call for one item and sample: what was sent, what came back, and
    the labels it gave (valid against the codebook and its rules, or stored as invalid with
    the reason: never mapped silently)."""

    class Outcome(models.TextChoices):
        LABELED = "labeled", "labeled"
        INVALID = "invalid", "invalid answer"
        FAILED = "failed", "failed (no answer after retries)"

    run = models.ForeignKey(MachineRun, on_delete=models.CASCADE, related_name="calls")
    rater = models.ForeignKey(MachineRater, on_delete=models.CASCADE, related_name="calls")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="machine_calls")
    sample = models.PositiveSmallIntegerField(default=0)
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    labels = models.JSONField(default=dict, blank=True)
    problem = models.TextField(blank=True, help_text="why the answer is invalid or failed")
    structured = models.BooleanField(help_text="the answer was asked for with a JSON schema")
    model_returned = models.CharField(max_length=200, blank=True)
    parameters = models.JSONField(default=dict)
    messages = models.JSONField(help_text="the full prompt sent")
    prompt_sha256 = models.CharField(max_length=64)
    prompt_cut = models.JSONField(default=dict, help_text="what the token budget cut, and how")
    response = models.JSONField(null=True, blank=True, help_text="the raw response body")
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_id", "sample", "pk"]
        constraints = [
            # One kept answer per rater, item and sample; a failed call may be tried again.
            models.UniqueConstraint(
                fields=["rater", "item", "sample"],
                condition=~Q(outcome="failed"),
                name="machine_call_one_answer",
            )
        ]

    def __str__(self) -> str:
        return f"call {self.pk} ({self.outcome}) of {self.rater} on item {self.item_id}"
