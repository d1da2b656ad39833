"""Admin: everything readable; published versions and their contents are read-only, because
agreement numbers are computed against them. Structural edits belong to the owner pages."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .models import Category, ChangeOperation, Codebook, CodebookVersion, Facet, Proposal


def _published(obj: Any) -> bool:
    if isinstance(obj, CodebookVersion):
        return obj.is_published
    if isinstance(obj, Facet):
        return obj.version.is_published
    if isinstance(obj, Category | ChangeOperation):
        version = obj.facet.version if isinstance(obj, Category) else obj.version
        return version.is_published
    return False


class PublishedReadOnly(admin.ModelAdmin):
    """Read-only (no change, no delete) for anything inside a published version."""

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not _published(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not _published(obj) and super().has_delete_permission(request, obj)


@admin.register(Codebook)
class CodebookAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_by", "created_at"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(CodebookVersion)
class CodebookVersionAdmin(PublishedReadOnly):
    list_display = ["codebook", "number", "status", "published_at"]
    list_filter = ["codebook", "status"]
    readonly_fields = ["status", "based_on", "published_at", "created_by"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # drafts are started from the codebook pages (they copy the content)


@admin.register(Facet)
class FacetAdmin(PublishedReadOnly):
    list_display = ["key", "name", "version", "kind", "required", "order"]
    list_filter = ["version__codebook", "version"]
    list_select_related = ["version__codebook"]


@admin.register(Category)
class CategoryAdmin(PublishedReadOnly):
    list_display = ["code", "name", "facet", "parent", "archived"]
    list_filter = ["facet__version__codebook", "facet__version", "facet__key", "archived"]
    list_select_related = ["facet__version__codebook", "parent"]
    search_fields = ["code", "name", "definition"]
    raw_id_fields = ["parent", "origin"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting is for categories added in a draft; the rest are archived (labels use them).
        if obj is not None and obj.origin_id is not None:
            return False
        return super().has_delete_permission(request, obj)


@admin.register(ChangeOperation)
class ChangeOperationAdmin(admin.ModelAdmin):
    list_display = ["kind", "category", "version", "created_by", "created_at"]
    list_filter = ["kind", "version"]
    readonly_fields = [
        "version",
        "kind",
        "category",
        "targets",
        "detail",
        "created_by",
        "created_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Proposal)
class ProposalAdmin(admin.ModelAdmin):
    list_display = ["name", "facet", "status", "proposed_by", "created_at"]
    list_filter = ["status", "facet__key"]
    list_select_related = ["facet__version__codebook", "proposed_by"]
    raw_id_fields = ["facet", "parent", "resolved_to"]
