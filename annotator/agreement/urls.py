from django.urls import path

from . import drift_views, headline_views, views

app_name = "agreement"

urlpatterns = [
    path("studies/<int:study_id>/", views.study_report, name="study"),
    path("studies/<int:study_id>/start/", views.start_run, name="start"),
    path("studies/<int:study_id>/threshold/", views.update_threshold, name="threshold"),
    path("studies/<int:study_id>/annotators/", views.annotator_diagnostics, name="annotators"),
    path("studies/<int:study_id>/headline/", headline_views.headline_page, name="headline"),
    path("studies/<int:study_id>/drift/", drift_views.drift_page, name="drift"),
    path("runs/<int:run_id>/", views.run_report, name="run"),
    path("runs/<int:run_id>/pass/", views.pass_calibration, name="pass"),
    path(
        "runs/<int:run_id>/facets/<slug:facet>/cells/<int:i>/<int:j>/",
        views.confusion_cell,
        name="cell",
    ),
]
