"""The facet pickers of the annotate page, put together from partials kept per codebook version.

Rendering ~70 categories with their definitions through the template engine was most of the
page's cost, and nearly all of it is the same on every page. `_facets.html` is three partials
(a facet's start, an option, a facet's end), and what the first two render is kept on the cached
CodebookSchema: each facet's start without an error, both with its "unsure" box unchecked and
checked, each option both unchecked and checked (a group a `leaf_only` rule refuses is marked
so once and for all). A page picks the pieces its choices call for and renders only what is its
own: a facet's start that shows an error, and each facet's end (it
holds the page's propose URL). Which markup a checked option or box has is the template's
alone, and no kept piece depends on anything but its key: one annotation's unsure box cannot
reach another's page.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.template.loader import get_template, render_to_string
from django.utils.safestring import SafeString, mark_safe

from ..codebook import CodebookSchema

TEMPLATE = "studies/_facets.html"


@dataclass(frozen=True)
class Pieces:
    """The partials of one codebook version as they render on every page."""

    starts: dict[tuple[int, bool], str]  # (facet id, unsure) → facet-start without an error
    options: dict[tuple[int, bool], str]  # (category id, checked) → option


def facets_html(
    schema: CodebookSchema,
    selected: dict[int, list[int]],
    errors: dict[str, str],
    propose_url: str,
    unsure: Collection[str] = (),
) -> SafeString:
    """The pickers of `schema`: the `selected` categories (ids by facet id) checked, the facets
    whose keys are in `unsure` marked unsure, `errors` (by facet key) shown on their facets, and
    "propose a category" posting to `propose_url`."""
    pieces = _pieces(schema)
    html: list[str] = []
    for facet in schema.facets:
        error = errors.get(facet.key)  # rare: a submit that comes back
        marked = facet.key in unsure
        if error:
            html.append(_render("facet-start", facet=facet, error=error, unsure=marked))
        else:
            html.append(pieces.starts[facet.id, marked])
        chosen = set(selected.get(facet.id, ()))
        html.extend(pieces.options[c.id, c.id in chosen] for c in facet.categories)
        html.append(_facet_end(facet.id, propose_url))
    return mark_safe("".join(html))  # every piece rendered (and escaped) by the template engine


def _pieces(schema: CodebookSchema) -> Pieces:
    pieces = schema.memo.get(TEMPLATE)
    if not isinstance(pieces, Pieces):  # the first page of this version in this process
        locked = schema.locked_groups()
        pieces = Pieces(
            starts={
                (f.id, marked): _render("facet-start", facet=f, error=None, unsure=marked)
                for f in schema.facets
                for marked in (False, True)
            },
            options={
                (c.id, checked): _render(
                    "option", facet=f, category=c, checked=checked, locked=c.id in locked
                )
                for f in schema.facets
                for c in f.categories
                for checked in (False, True)
            },
        )
        schema.memo[TEMPLATE] = pieces
    return pieces


def _render(partial: str, **context: Any) -> str:
    return render_to_string(f"{TEMPLATE}#{partial}", context)


@lru_cache(maxsize=1)
def _facet_end_template() -> Any:
    return get_template(f"{TEMPLATE}#facet-end")


def _facet_end(facet_id: int, propose_url: str) -> str:
    """A facet's end, the one piece rendered on every page (six per page with the seed
    codebook): through the template kept per process, with values that need no escaping (an
    id's digits, a URL of our own from reverse()) marked safe, which halves its cost."""
    values = {"facet_id": mark_safe(str(int(facet_id))), "propose_url": mark_safe(propose_url)}
    return str(_facet_end_template().render(values))
