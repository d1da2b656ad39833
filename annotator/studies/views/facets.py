"""The facet pickers of the annotate page, rendered once per codebook version.

Rendering ~70 categories with their definitions is most of the page's cost, and it is the same
for every item: the pickers are rendered once without choices (kept on the cached
CodebookSchema) and each page then marks its own choices. A form coming back with errors is
rendered in full, as it is rare.
"""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from ..codebook import CodebookSchema

TEMPLATE = "studies/_facets.html"
PROPOSE_URL = "__propose_url__"


def facets_html(
    schema: CodebookSchema,
    selected: dict[int, list[int]],
    errors: dict[str, str],
    propose_url: str,
) -> SafeString:
    if errors:
        rows = facet_rows(schema, selected, errors)
        return mark_safe(render_to_string(TEMPLATE, {"facets": rows, "propose_url": propose_url}))
    html = schema.memo.get(TEMPLATE)
    if html is None:
        rows = facet_rows(schema, {}, {})
        html = render_to_string(TEMPLATE, {"facets": rows, "propose_url": PROPOSE_URL})
        schema.memo[TEMPLATE] = html
    html = html.replace(PROPOSE_URL, propose_url)
    for category in {c for ids in selected.values() for c in ids}:
        marker = f'value="{int(category)}" aria-describedby'
        html = html.replace(marker, f'value="{int(category)}" checked aria-describedby', 1)
    return mark_safe(html)  # rendered (and escaped) by the template engine above


def facet_rows(
    schema: CodebookSchema, selected: dict[int, list[int]], errors: dict[str, str]
) -> list[dict[str, Any]]:
    return [
        {"node": f, "selected": set(selected.get(f.id, ())), "error": errors.get(f.key)}
        for f in schema.facets
    ]
