from django.urls import path

from . import api

urlpatterns = [
    path(
        "studies/<int:study_id>/agreement-runs/",
        api.RunListCreateApi.as_view(),
        name="api-agreement-runs",
    ),
    path("agreement-runs/<int:run_id>/", api.RunDetailApi.as_view(), name="api-agreement-run"),
]
urlpatterns += [
    path(
        "studies/<int:study_id>/agreement-settings/",
        api.AgreementSettingsApi.as_view(),
        name="api-agreement-settings",
    ),
    path(
        "studies/<int:study_id>/rounds/<int:round_id>/calibration-pass/",
        api.CalibrationPassApi.as_view(),
        name="api-calibration-pass",
    ),
]
urlpatterns += [
    path(
        "studies/<int:study_id>/annotator-diagnostics/",
        api.AnnotatorDiagnosticsApi.as_view(),
        name="api-annotator-diagnostics",
    ),
]
urlpatterns += [
    path("studies/<int:study_id>/drift/", api.DriftApi.as_view(), name="api-drift"),
]
