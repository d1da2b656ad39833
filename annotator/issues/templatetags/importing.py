"""`{% may_import as can_import %}`: whether a page shows the Import and Sync links."""

from __future__ import annotations

from django import template
from django.template.context import Context

from ..access import shows_import_links

register = template.Library()


@register.simple_tag(takes_context=True)
def may_import(context: Context) -> bool:
    request = context.get("request")
    return shows_import_links(getattr(request, "user", None))
