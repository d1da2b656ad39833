from django.contrib import admin

from .models import (
    Annotation,
    AnnotationLabel,
    Assignment,
    Invitation,
    Item,
    Membership,
    Round,
    Selection,
    Study,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


class RoundInline(admin.TabularInline):
    model = Round
    extra = 0


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "codebook_version", "overlap_k", "created_at"]
    inlines = [MembershipInline, RoundInline]


@admin.register(Selection)
class SelectionAdmin(admin.ModelAdmin):
    list_display = ["study", "round", "matched", "sample_size", "seed", "added", "created_at"]
    readonly_fields = [f.name for f in Selection._meta.fields]

    def has_add_permission(self, request: object) -> bool:
        # Every field is read-only: an "add" would save an empty row and fail in the database
        # (a 500). Selections are written by services.select_issues only.
        return False


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["pk", "study", "round", "issue", "quota", "active_count", "submitted_count"]
    list_filter = ["study", "round"]
    list_select_related = ["study", "round", "issue__repository"]
    raw_id_fields = ["issue"]
    # The counters are the database's guard of k; only the services change them.
    readonly_fields = ["active_count", "submitted_count"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["pk", "item", "annotator", "status", "assigned_at", "touched_at"]
    list_filter = ["status"]
    list_select_related = ["item", "annotator"]
    readonly_fields = [f.name for f in Assignment._meta.fields]

    def has_add_permission(self, request: object) -> bool:
        # As for selections: assignments come from services.next_assignment only.
        return False


class AnnotationLabelInline(admin.TabularInline):
    model = AnnotationLabel
    extra = 0
    readonly_fields = ["facet", "category"]
    can_delete = False


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["pk", "assignment", "status", "seconds_spent", "submitted_at"]
    list_filter = ["status"]
    readonly_fields = [f.name for f in Annotation._meta.fields]
    inlines = [AnnotationLabelInline]


admin.site.register(Invitation)
