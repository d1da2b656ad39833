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
