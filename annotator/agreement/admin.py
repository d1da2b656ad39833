from django.contrib import admin

from .models import AgreementRun, AgreementSettings, CalibrationPass


@admin.register(AgreementRun)
class AgreementRunAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["pk", "study", "round", "trigger", "status", "progress", "created_at"]
    list_filter = ["status", "trigger"]
    list_select_related = ["study", "round"]
    readonly_fields = ["result", "inputs", "error", "started_at", "finished_at"]


@admin.register(AgreementSettings)
class AgreementSettingsAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["study", "threshold"]


@admin.register(CalibrationPass)
class CalibrationPassAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = [
        "round",
        "run",
        "threshold",
        "lowest_alpha",
        "lowest_ci_low",
        "passed_by",
        "passed_at",
    ]
    readonly_fields = ["run", "threshold", "lowest_alpha", "lowest_ci_low", "passed_by"]
