"""The disagreements table: the items an adjudicator had to (or has to) look at, with each
annotator's labels beside the decision, its source, reason and comment.

An item is in it when its annotators labelled some facet differently (ItemAgreement's
disagreeing facets) or, when the study sends unsure labels to adjudication, when one of them
marked a facet unsure (ItemAgreement.unsure_facets). Four streams ordered by item id (items,
disagreeing facets, annotators' labels, decision labels) merged in one pass, as in `rows.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet

from annotator.adjudication.models import DecisionLabel, ItemAgreement
from annotator.studies.models import Annotation, AnnotationLabel, Item, Study

from .columns import annotator_column, final_column
from .rows import CHUNK, ITEM_FIELDS, Codebook, _item_row, _Lookahead, _merge


def disagreement_items(items: QuerySet[Item], study: Study) -> QuerySet[Item]:
    """The items whose annotators differ on a facet, or (when the study routes unsure labels
    to adjudication) where one marked a facet unsure."""
    through = ItemAgreement.disagreeing_facets.through
    differs = Exists(through.objects.filter(itemagreement__item=OuterRef("pk")))
    routed = Q(differs)
    if study.route_unsure_to_adjudication:
        routed |= Q(agreement__isnull=False) & ~Q(agreement__unsure_facets=[])
    return items.filter(routed)


def disagreement_rows(
    items: QuerySet[Item], book: Codebook, usernames: dict[int, str]
) -> Iterator[dict[str, Any]]:
    """One row per item of `items` (already narrowed by `disagreement_items`)."""
    heads = (
        items.order_by("pk")
        .values_list(
            *ITEM_FIELDS,
            "agreement__value",
            "agreement__unsure_facets",
            "decision__source",
            "decision__reason",
            "decision__comment",
            "decision__updated_at",
        )
        .iterator(chunk_size=CHUNK)
    )
    labels = (
        AnnotationLabel.objects.filter(
            annotation__status=Annotation.Status.SUBMITTED,
            annotation__assignment__item__in=items.values("pk"),
        )
        .order_by("annotation__assignment__item_id", "category_id")
        .values_list(
            "annotation__assignment__item_id", "annotation__assignment__annotator_id", "category_id"
        )
        .iterator(chunk_size=CHUNK)
    )
    differing = _Lookahead(
        ItemAgreement.disagreeing_facets.through.objects.filter(
            itemagreement__item__in=items.values("pk")
        )
        .order_by("itemagreement__item_id", "facet__order", "facet_id")
        .values_list("itemagreement__item_id", "facet__key")
        .iterator(chunk_size=CHUNK)
    )
    final = _Lookahead(
        DecisionLabel.objects.filter(decision__item__in=items.values("pk"))
        .order_by("decision__item_id", "category_id")
        .values_list("decision__item_id", "category_id")
        .iterator(chunk_size=CHUNK)
    )
    for head, given in _merge(heads, labels):
        row = _item_row(head)
        value, unsure, source, reason, comment, decided_at = head[7:13]
        row |= {"agreement": value, "unsure": list(unsure or []), "decision_source": source}
        row |= {"reason": reason or None, "comment": comment or None, "decided_at": decided_at}
        row["disagreeing"] = [key for _, key in differing.take(head[0])]
        for _, annotator, category in given:
            _put(row, book, category, lambda f, a=annotator: annotator_column(f, usernames[a]))
        for _, category in final.take(head[0]):
            _put(row, book, category, final_column)
        yield row


def _put(row: dict[str, Any], book: Codebook, category: int, column: Any) -> None:
    key, code, _ = book.category(category)
    facet = next((f for f in book.facets if f.key == key), None)
    if facet is None:
        return
    name = column(facet)
    if facet.kind == "multi":
        row.setdefault(name, []).append(code)
    else:
        row[name] = code
