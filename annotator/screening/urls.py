from django.urls import path

from . import views

app_name = "screening"

urlpatterns = [
    path("studies/<int:study_id>/new/", views.screening_new, name="new"),
    path(
        "studies/<int:study_id>/rounds/<int:number>/",
        views.screening_panel_page,
        name="panel",
    ),
    path(
        "studies/<int:study_id>/rounds/<int:number>/retrain/",
        views.screening_retrain,
        name="retrain",
    ),
    path(
        "studies/<int:study_id>/rounds/<int:number>/audit/",
        views.screening_audit,
        name="audit",
    ),
    path(
        "studies/<int:study_id>/rounds/<int:number>/include/",
        views.screening_include,
        name="include",
    ),
]
