from django.contrib import admin

from .models import AdjudicationSettings, Change, Comment, Decision, DecisionLabel, ItemAgreement


class DecisionLabelInline(admin.TabularInline):
    model = DecisionLabel
    extra = 0
    raw_id_fields = ["facet", "category"]


@admin.register(Decision)
class DecisionAdmin(admin.ModelAdmin):
    list_display = ["item", "source", "reason", "decided_by", "version", "updated_at"]
    list_filter = ["source", "reason"]
    raw_id_fields = ["item", "decided_by"]
    inlines = [DecisionLabelInline]
    # The audit trail is written by the services; edits here would bypass it.
    readonly_fields = ["version"]


@admin.register(ItemAgreement)
class ItemAgreementAdmin(admin.ModelAdmin):
    list_display = ["item", "value", "computed_at"]
    raw_id_fields = ["item"]


@admin.register(Comment)
class CommentAdmin(admin.ModelAdmin):
    list_display = ["item", "author", "created_at"]
    raw_id_fields = ["item", "author"]


@admin.register(Change)
class ChangeAdmin(admin.ModelAdmin):
    list_display = ["item", "subject", "user", "at"]
    list_filter = ["subject"]
    raw_id_fields = ["item", "annotation", "user"]

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False  # the history is append-only

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False


admin.site.register(AdjudicationSettings)
