"""Issue and export filters written for people: the one place a stored filter becomes text.

A selection stores its filters as the list page gave them, so `repository` is an id ("1"); a
method section, a study page or a dataset card must say `hpcaitech/ColossalAI`. Every page,
card and paragraph that prints filters goes through `readable_filters` / `filters_in_words`
(Selection.method_text, the study page, the export card and title, the methods paragraph's
selections).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .models import Repository

# Filters whose stored value is a primary key, and the model that names it.
ID_FILTERS: dict[str, type[Repository]] = {"repository": Repository}


def filter_names(filter_sets: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """For each id-valued filter, stored id → name (`{"repository": {"1": "owner/name"}}`),
    read in one query per filter for all the filter sets given."""
    sets = list(filter_sets)
    names: dict[str, dict[str, str]] = {}
    for key, model in ID_FILTERS.items():
        ids = {str(f[key]) for f in sets if str(f.get(key, "")).isdigit()}
        if ids:
            rows = model.objects.filter(pk__in=[int(i) for i in ids])
            names[key] = {str(r.pk): r.full_name for r in rows}
    return names


def readable_filters(
    filters: Mapping[str, Any], names: Mapping[str, Mapping[str, str]] | None = None
) -> dict[str, str]:
    """The filters that have a value, as text, an id replaced by its name (`#7` when the row
    is gone); a value that is no id (an export's `owner/name`) is kept as given."""
    if names is None:
        names = filter_names([filters])
    out: dict[str, str] = {}
    for key, value in filters.items():
        if value in (None, ""):
            continue
        text = str(value)
        if key in ID_FILTERS and text.isdigit():
            text = names.get(key, {}).get(text, f"#{text}")
        out[key] = text
    return out


def filters_in_words(
    filters: Mapping[str, Any],
    names: Mapping[str, Mapping[str, str]] | None = None,
    *,
    quote: bool = True,
    separator: str = "; ",
) -> str:
    """`repository = 'hpcaitech/ColossalAI'; state = 'closed'` (empty when no filter)."""
    shown = readable_filters(filters, names)
    return separator.join(
        f"{key} = {value!r}" if quote else f"{key} = {value}" for key, value in shown.items()
    )
