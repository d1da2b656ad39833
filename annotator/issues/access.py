"""Who may write into the shared issue pool: imports and GitHub syncs (pages and API) are for
staff and holders of `issues.import_issues` (the "Importers" group, migration 0006). Everyone
signed in reads issues."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, Permission
from django.core.cache import cache
from django.core.exceptions import PermissionDenied

IMPORT_PERMISSION = "issues.import_issues"
IMPORTERS_GROUP = "Importers"  # holds IMPORT_PERMISSION (migration 0006_import_permission)
# The top bar shows the links on every page, the annotate page included, whose query count is
# held flat (tests/studies/test_query_counts.py): the answer for the links is kept this long in
# the cache instead of costing two permission queries a page. The pages check it live.
LINK_CACHE_SECONDS = 60
REFUSAL = "Importing and syncing issues needs the import permission: ask an administrator."


def can_import(user: Any) -> bool:
    """Staff hold it implicitly (superusers, `createsuperuser`, hold every permission)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return bool(user.is_staff or user.has_perm(IMPORT_PERMISSION))


def require_importer(user: Any) -> None:
    """A page's 403 (PermissionDenied) unless the user may import."""
    if not can_import(user):
        raise PermissionDenied(REFUSAL)


def shows_import_links(user: Any) -> bool:
    """Whether pages show `user` the Import and Sync links: can_import, kept for
    LINK_CACHE_SECONDS (a permission granted in the admin shows within a minute)."""
    if not getattr(user, "is_authenticated", False):
        return False
    if user.is_staff:
        return bool(user.is_active)
    key = _link_key(user)
    shown = cache.get(key)
    if shown is None:
        shown = can_import(user)
        cache.set(key, shown, LINK_CACHE_SECONDS)
    return bool(shown)


def _link_key(user: Any) -> str:
    return f"issues:import-links:{user.pk}"


def grant_import(user: Any) -> None:
    """Put `user` in the Importers group, made here again (with its permission) if it was
    deleted (or flushed away by a test database reset, which keeps only the permissions)."""
    group, _ = Group.objects.get_or_create(name=IMPORTERS_GROUP)
    app_label, codename = IMPORT_PERMISSION.split(".")
    permission = Permission.objects.get(content_type__app_label=app_label, codename=codename)
    group.permissions.add(permission)
    user.groups.add(group)
    cache.delete(_link_key(user))
