from django.urls import path

from . import api

urlpatterns = [
    path("duplicate-passes/", api.PassListCreateApi.as_view(), name="api-duplicate-passes"),
    path("duplicate-passes/<int:pass_id>/", api.PassDetailApi.as_view(), name="api-duplicate-pass"),
    path("duplicate-groups/", api.GroupListApi.as_view(), name="api-duplicate-groups"),
    path(
        "studies/<int:study_id>/duplicate-marks/",
        api.MarkListCreateApi.as_view(),
        name="api-duplicate-marks",
    ),
    path(
        "studies/<int:study_id>/duplicate-marks/<int:mark_id>/undo/",
        api.MarkUndoApi.as_view(),
        name="api-duplicate-mark-undo",
    ),
    path("issues/<int:issue_id>/similar/", api.SimilarApi.as_view(), name="api-similar-issues"),
]
