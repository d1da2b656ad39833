from django.urls import path

from . import api

urlpatterns = [
    path(
        "studies/<int:study_id>/machine-raters/",
        api.RaterListCreateApi.as_view(),
        name="api-machine-raters",
    ),
    path(
        "machine-raters/<int:rater_id>/estimate/",
        api.EstimateApi.as_view(),
        name="api-machine-estimate",
    ),
    path(
        "machine-raters/<int:rater_id>/runs/",
        api.RunListCreateApi.as_view(),
        name="api-machine-runs",
    ),
    path("machine-runs/<int:run_id>/", api.RunDetailApi.as_view(), name="api-machine-run"),
]
