from django.urls import path

from . import headline_views, views

app_name = "agreement"

urlpatterns = [
    path("studies/<int:study_id>/", views.study_report, name="study"),
    path("studies/<int:study_id>/start/", views.start_run, name="start"),
    path("studies/<int:study_id>/threshold/", views.update_threshold, name="threshold"),
    path("runs/<int:run_id>/", views.run_report, name="run"),
    path("runs/<int:run_id>/pass/", views.pass_calibration, name="pass"),
    path(
        "runs/<int:run_id>/facets/<slug:facet>/cells/<int:i>/<int:j>/",
        views.confusion_cell,
        name="cell",
    ),
]
urlpatterns += [
    path(
        "studies/<int:study_id>/annotators/",
        views.annotator_diagnostics,
        name="annotators",
    ),
]
urlpatterns += [
    path("studies/<int:study_id>/headline/", headline_views.headline_page, name="headline"),
]
