from django.contrib import admin

from .models import ExportJob, Pseudonym


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "study", "format", "table", "status", "rows_written", "created_at"]
    list_filter = ["status", "format"]
    raw_id_fields = ["study", "created_by"]
    readonly_fields = ["file", "card", "error", "started_at", "finished_at"]


@admin.register(Pseudonym)
class PseudonymAdmin(admin.ModelAdmin):
    list_display = ["code", "kind", "name", "study", "created_at"]
    list_filter = ["kind"]
    search_fields = ["code", "name"]
    raw_id_fields = ["study"]
