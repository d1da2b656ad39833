"""Whole-study figures computed by a background job on a large study, served at once from the
last computation meanwhile.

The dashboard (and the progress API), the disagreement analytics and the analysis read every
assignment, annotation or decision of the study: 0.5 to 2.4 s at 100,000 items. They are kept in
the cache under a fingerprint that every write they depend on changes, so while annotators label
nearly every view would compute them again. On a study of more than FIGURES_INLINE_MAX_ITEMS
items a view instead serves the last computed figures, says when they were computed (`Figures`),
and a Celery job computes the current ones; the page polls until they are there. A smaller
study computes them in the request, under their fingerprint, as before. The analysis's list of
the study's repositories, and a codebook version's rule breaks over the submitted annotations of
its owner's studies (annotator/studies/usage.py), are figures the same way.

The last computation is kept under a key without the fingerprint (`figures-last:<name>`): its
value, the fingerprint it was computed for and when. At most one job runs per name: a lock
(`figures-lock:<name>`, cache.add) taken when it is sent and deleted when it ends, or lapsing
after FIGURES_LOCK_SECONDS if its worker died. A job that fails leaves the value in place and
records its error against the fingerprint, so the page shows the error instead of polling, and
the next write tries again. When neither the lock can be taken nor the job sent (Redis down), the
request computes the figures itself, as for a small study.

While annotators label, every view would find the figures out of date again as soon as a job has
computed them, and the worker would compute a study's dashboard back to back. A job starts at
most once per FIGURES_MIN_INTERVAL_SECONDS (30) per name: sooner, the last figures are served as
updating, and the page polls until the next job has computed them.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from django.utils.module_loading import import_string
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers, status
from rest_framework.response import Response

logger = logging.getLogger(__name__)

# How long the last computation stays when nobody reads it.
LAST_SECONDS = 30 * 24 * 3600
# Seconds a client is asked to wait before asking again (the API's 202, the pages' polling).
RETRY_AFTER = 2


@dataclass(frozen=True)
class Figures:
    """Figures as served: `value` (None until computed once), when they were computed, whether
    newer ones are being computed, and why the last computation failed ("" if it did not)."""

    value: Any
    as_of: datetime | None
    updating: bool = False
    error: str = ""

    @property
    def ready(self) -> bool:
        return self.as_of is not None

    @property
    def stale(self) -> bool:
        """The data changed since they were computed."""
        return self.updating or bool(self.error)

    @property
    def polling(self) -> bool:
        """A page should ask again: a job is computing them."""
        return self.updating and not self.error

    @property
    def retry_after(self) -> int:
        return RETRY_AFTER

    @property
    def as_of_label(self) -> str:
        """When they were computed, as a person reads it: the time today, else the date too."""
        if self.as_of is None:
            return ""
        local = timezone.localtime(self.as_of)
        today = local.date() == timezone.localdate()
        return f"{local:%H:%M:%S}" if today else f"{local:%Y-%m-%d %H:%M:%S}"


class NotComputedYet(Exception):
    """A large study's figures that a job is computing for the first time (or failed to)."""

    def __init__(self, figures: Figures) -> None:
        super().__init__("the figures are being computed")
        self.figures = figures


def study_figures(
    name: str,
    *,
    fingerprint: str,
    items: int,
    compute: str,
    params: dict[str, Any],
    timeout: int,
) -> Figures:
    """The figures `compute` (the dotted path of a function taking `params`, JSON values, and
    returning a picklable value) computes for `name` (what they are of, e.g. the study's id),
    current as of `fingerprint`.

    With `items` at most FIGURES_INLINE_MAX_ITEMS they are computed here and kept `timeout`
    seconds under `name` and the fingerprint. Above, the last computation is served, and a job
    is sent when its fingerprint is out of date."""
    if items <= settings.FIGURES_INLINE_MAX_ITEMS:
        return _inline(name, fingerprint, compute, params, timeout)
    last = cache.get(_last_key(name))
    if last is not None and last["fingerprint"] == fingerprint:
        return Figures(last["value"], last["computed_at"])
    if last is not None and last.get("failed") == fingerprint:
        return Figures(last["value"], last["computed_at"], error=last["error"])
    if last is not None and _recent(last):
        return _served(last, fingerprint)
    if not _lock_or_running(name, compute, params, fingerprint):
        return _inline(name, fingerprint, compute, params, timeout)
    last = cache.get(_last_key(name)) or last  # computed already when tasks run in-process
    return _served(last, fingerprint)


def _recent(last: dict[str, Any]) -> bool:
    """The last figures were computed less than FIGURES_MIN_INTERVAL_SECONDS ago."""
    computed_at = last.get("computed_at")
    interval = timedelta(seconds=settings.FIGURES_MIN_INTERVAL_SECONDS)
    return computed_at is not None and timezone.now() - computed_at < interval


def _served(last: dict[str, Any] | None, fingerprint: str) -> Figures:
    if last is None:
        return Figures(None, None, updating=True)
    current = last["fingerprint"] == fingerprint
    error = last["error"] if last.get("failed") == fingerprint else ""
    return Figures(last["value"], last["computed_at"], updating=not current, error=error)


def _inline(
    name: str, fingerprint: str, compute: str, params: dict[str, Any], timeout: int
) -> Figures:
    key = f"{name}:{hashlib.sha256(fingerprint.encode()).hexdigest()[:32]}"
    kept = cache.get(key)
    if kept is None:
        kept = import_string(compute)(**params), timezone.now()
        cache.set(key, kept, timeout)
    return Figures(*kept)


def _lock_or_running(name: str, compute: str, params: dict[str, Any], fingerprint: str) -> bool:
    """Send the job unless one holds the lock; False when neither could be done (the cache or
    the queue unreachable): the caller computes the figures itself."""
    token = uuid.uuid4().hex
    if not cache.add(_lock_key(name), token, settings.FIGURES_LOCK_SECONDS):
        return cache.get(_lock_key(name)) is not None  # None: the cache did not answer
    try:
        compute_figures_task.apply_async(args=[name, compute, params, fingerprint, token])
    except Exception as error:  # any broker failure: connection refused, timeout, auth, …
        logger.warning("figures %s computed in the request, the queue failed: %s", name, error)
        cache.delete(_lock_key(name))
        return False
    return True


def recompute(
    name: str, compute: str, params: dict[str, Any], fingerprint: str, token: str
) -> None:
    """The job: compute the figures and keep them as the last computation, or on failure keep
    the previous value with the error; then release the lock (if still its own)."""
    last = cache.get(_last_key(name))
    try:
        if last is None or last["fingerprint"] != fingerprint:
            started = timezone.now()  # what they show is the data as of the start
            value = import_string(compute)(**params)
            last = {"value": value, "fingerprint": fingerprint, "computed_at": started}
            cache.set(_last_key(name), last, LAST_SECONDS)
    except Exception as error:
        logger.exception("figures %s failed", name)
        failed = {"value": None, "computed_at": None, "fingerprint": None, **(last or {})}
        failed.update(failed=fingerprint, error=f"{type(error).__name__}: {error}"[:500])
        cache.set(_last_key(name), failed, LAST_SECONDS)
        raise
    finally:
        if cache.get(_lock_key(name)) == token:
            cache.delete(_lock_key(name))


@shared_task(time_limit=300, soft_time_limit=270)  # type: ignore[untyped-decorator]
def compute_figures_task(
    name: str, compute: str, params: dict[str, Any], fingerprint: str, token: str
) -> None:
    """Compute a large study's figures (annotator/figures.py)."""
    recompute(name, compute, params, fingerprint, token)


# --- the API's side: `as_of` and `stale` on its answers, 202 until the first figures --------------
class FiguresAsOfOutput(serializers.Serializer[Any]):
    """The fields an answer with a large study's figures carries (annotator/figures.py)."""

    as_of = serializers.DateTimeField(help_text="when the figures were computed")
    stale = serializers.BooleanField(
        help_text="true when the study changed since: newer figures are being computed (or "
        "computing them failed), ask again in a few seconds"
    )


class FiguresPendingOutput(serializers.Serializer[dict[str, Any]]):
    detail = serializers.CharField()
    computing = serializers.BooleanField(
        help_text="true (202): being computed, ask again after Retry-After seconds; false "
        "(503): computing them failed, they are computed again after the next change"
    )


PENDING_RESPONSES = {
    202: OpenApiResponse(
        FiguresPendingOutput,
        description="a large study's figures, never computed before, are being computed by a "
        "background job: ask again after Retry-After seconds",
    ),
    503: OpenApiResponse(
        FiguresPendingOutput,
        description="a large study's figures could not be computed (and none were before)",
    ),
}
RETRY_AFTER_HEADER = OpenApiParameter(
    "Retry-After",
    int,
    OpenApiParameter.HEADER,
    response=[202],
    description="seconds to wait before asking again",
)


def as_of(figures: Figures) -> dict[str, Any]:
    """`as_of` and `stale` of an API answer (FiguresAsOfOutput)."""
    return {"as_of": figures.as_of, "stale": figures.stale}


def pending_response(figures: Figures) -> Response | None:
    """The API's answer while a large study's figures were never computed (202 with
    Retry-After, or 503 when computing them failed); None once there are figures."""
    if figures.ready:
        return None
    if figures.error:
        detail = f"The figures could not be computed ({figures.error}); they are computed "
        detail += "again after the next change."
        body = {"detail": detail, "computing": False}
        return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    detail = f"The figures are being computed: ask again in {RETRY_AFTER} seconds."
    body = {"detail": detail, "computing": True}
    response = Response(body, status=status.HTTP_202_ACCEPTED)
    response["Retry-After"] = str(RETRY_AFTER)
    return response


def _last_key(name: str) -> str:
    return f"figures-last:{name}"


def _lock_key(name: str) -> str:
    return f"figures-lock:{name}"
