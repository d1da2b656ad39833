from django.urls import path

from . import api

urlpatterns = [
    path("issues/", api.IssueListApi.as_view(), name="api-issue-list"),
    path("issues/<int:pk>/", api.IssueDetailApi.as_view(), name="api-issue-detail"),
    path("imports/", api.ImportJobCreateApi.as_view(), name="api-import-create"),
    path("imports/<int:pk>/", api.ImportJobDetailApi.as_view(), name="api-import-detail"),
    path("syncs/", api.SyncJobCreateApi.as_view(), name="api-sync-create"),
    path("syncs/<int:pk>/", api.SyncJobDetailApi.as_view(), name="api-sync-detail"),
]
