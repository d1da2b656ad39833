from django.urls import path

from . import views

app_name = "similarity"

urlpatterns = [
    path("studies/<int:study_id>/duplicates/", views.duplicates, name="duplicates"),
    path(
        "studies/<int:study_id>/duplicates/groups/<int:group_id>/",
        views.duplicate_group,
        name="group",
    ),
    path("studies/<int:study_id>/duplicates/mark/", views.mark, name="mark"),
    path("studies/<int:study_id>/duplicates/marks/<int:mark_id>/undo/", views.undo, name="undo"),
    path("studies/<int:study_id>/duplicates/passes/", views.start_pass, name="start_pass"),
    path("passes/<int:pass_id>/", views.pass_detail, name="pass"),
    path("issues/<int:issue_id>/similar/", views.similar_panel, name="similar"),
]
