"""Read-only views of a study's items for adjudicators: the disagreement queue, the
re-labeling queue after codebook splits, and the owner's overview of every item."""

from __future__ import annotations

import json

from django.core.cache import cache
from django.db.models import Exists, OuterRef, Q, QuerySet

from annotator.studies.codebook import codebook_schema
from annotator.studies.models import AnnotationLabel, Item, Study
from taxonomy_app.models import ChangeOperation

from .. import sql
from ..models import DecisionLabel, ItemAgreement


def disagreement_queue(
    *, study: Study, facet_id: int | None = None, round_id: int | None = None
) -> QuerySet[ItemAgreement]:
    """Complete items no rule or person has decided, lowest agreement first; optionally only
    those whose annotators differ in `facet_id` or marked it unsure, or of one round."""
    queue = ItemAgreement.objects.undecided().filter(item__study=study)
    if facet_id:
        queue = queue.filter(_differs_or_unsure(study, facet_id))
    if round_id:
        queue = queue.filter(item__round=round_id)
    return queue.select_related("item__issue__repository", "item__round").order_by(
        "value", "item__round__number", "item__position", "item"
    )


def _differs_or_unsure(study: Study, facet_id: int) -> Q:
    """The annotators differ in the facet, or one marked it unsure. The unsure keys are a JSON
    list: a match of the quoted key in its text works on PostgreSQL and SQLite alike (JSON
    `contains` has no SQLite form); facet keys hold no quotes."""
    differs = Exists(
        ItemAgreement.disagreeing_facets.through.objects.filter(
            itemagreement=OuterRef("pk"), facet=facet_id
        )
    )
    facet = codebook_schema(study.codebook_version).facet(facet_id)
    if facet is None:
        return Q(differs)
    return Q(differs) | Q(unsure_facets__icontains=json.dumps(facet.key))


def next_in_queue(
    *, study: Study, facet_id: int | None = None, round_id: int | None = None
) -> Item | None:
    """The first item of the (filtered) disagreement queue, or None when it is empty.

    Ids first (as adjudication/paging.py): the queue's order needs only the agreement, item and
    round, so the first entry is found with those and the item alone is then read, rather than
    each undecided item's issue (with its ~2 KB body) and repository joined before the sort."""
    queue = disagreement_queue(study=study, facet_id=facet_id, round_id=round_id)
    first = queue.select_related(None).values("item")[:1]
    return Item.objects.filter(pk__in=first).first()


def _split_after(label_category: str) -> Exists:
    """A later codebook version split the category a label points at."""
    return Exists(
        ChangeOperation.objects.filter(
            kind=ChangeOperation.Kind.SPLIT, category__origin=OuterRef(label_category)
        )
    )


def relabel_queue(*, study: Study) -> QuerySet[Item]:
    """Items whose labels use a category that a later codebook version split (so which of the
    new categories applies needs a person): their final decision still uses it, or an
    annotation does and no person has decided the item since the split."""
    split_annotation = AnnotationLabel.objects.filter(
        annotation__assignment__item=OuterRef("pk")
    ).filter(_split_after("category_id"))
    split_decision = DecisionLabel.objects.filter(decision__item=OuterRef("pk")).filter(
        _split_after("category_id")
    )
    newer_decision = Exists(
        ChangeOperation.objects.filter(
            kind=ChangeOperation.Kind.SPLIT,
            category__origin__in=AnnotationLabel.objects.filter(
                annotation__assignment__item=OuterRef(OuterRef("pk"))
            ).values("category_id"),
            created_at__gt=OuterRef("decision__updated_at"),
        )
    )
    stale = Q(decision__isnull=True) | Q(decision__source__in=["unanimous", "majority", "single"])
    return (
        Item.objects.filter(study=study)
        .filter(_uses_a_split_category())
        .filter(Exists(split_decision) | (Exists(split_annotation) & (stale | newer_decision)))
        .select_related("issue__repository", "round", "decision")
        .order_by("round__number", "position", "pk")
    )


def _uses_a_split_category() -> Q:
    """Items with a label or a final label on a category some codebook version split: what
    both conditions of the re-labeling queue need. The split categories are few (read first,
    one query); their labels are found through the label tables' category indexes, so a study
    of 100,000 items is not probed item by item, and with no split at all nothing is."""
    origins = list(
        ChangeOperation.objects.filter(
            kind=ChangeOperation.Kind.SPLIT, category__origin__isnull=False
        )
        .values_list("category__origin", flat=True)
        .distinct()
        .order_by()
    )
    if not origins:
        return Q(pk__in=[])
    labeled = AnnotationLabel.objects.filter(category__in=origins).values(
        "annotation__assignment__item"
    )
    decided = DecisionLabel.objects.filter(category__in=origins).values("decision__item")
    return Q(pk__in=labeled) | Q(pk__in=decided)


def item_overview(*, study: Study, round_id: int | None = None) -> QuerySet[Item]:
    """Every item of the study with its labeling state, agreement and decision."""
    items = Item.objects.filter(study=study).with_state()
    if round_id:
        items = items.filter(round=round_id)
    return items.select_related("issue__repository", "round", "decision", "agreement").order_by(
        "round__number", "position", "pk"
    )


# Kept under the adjudication fingerprint, which any write to the agreements or decisions
# changes: the timeout only bounds how long an unread entry stays.
QUEUE_CACHE_SECONDS = 24 * 3600


def queue_ids(
    *, study: Study, facet_id: int | None = None, round_id: int | None = None
) -> list[int]:
    """The ids of the disagreement queue's entries (ItemAgreement) in its order, computed once
    per state of the agreements, decisions and the study's items (sql.adjudication_fingerprint)
    and then read from the cache: the queue page, its API and the items page count and page
    through it without joining every item of the study to its decision on each view."""
    state = sql.adjudication_fingerprint(study.pk, None)
    stamp = ":".join(v.isoformat() if hasattr(v, "isoformat") else str(v) for v in state)
    key = f"adjudication-queue:{study.pk}:{facet_id or ''}:{round_id or ''}:{stamp}"
    ids = cache.get(key)
    if ids is None:
        queue = disagreement_queue(study=study, facet_id=facet_id, round_id=round_id)
        ids = list(queue.values_list("pk", flat=True))
        cache.set(key, ids, QUEUE_CACHE_SECONDS)
    return list(ids)


def queue_entries(ids: list[int]) -> list[ItemAgreement]:
    """The entries with these ids, in this order, with what the queue shows beside each (the
    item's issue, repository and round, the disagreeing facets); one query and a prefetch."""
    rows = (
        ItemAgreement.objects.filter(pk__in=ids)
        .select_related("item__issue__repository", "item__round")
        .prefetch_related("disagreeing_facets")
        .in_bulk()
    )
    return [rows[pk] for pk in ids if pk in rows]
