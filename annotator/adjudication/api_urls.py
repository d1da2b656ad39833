from django.urls import path

from . import api

urlpatterns = [
    path("studies/<int:study_id>/queue/", api.QueueApi.as_view(), name="api-adjudication-queue"),
    path(
        "studies/<int:study_id>/decisions/",
        api.DecisionListApi.as_view(),
        name="api-decision-list",
    ),
    path("items/<int:item_id>/decision/", api.DecisionApi.as_view(), name="api-decision"),
    path("items/<int:item_id>/discussion/", api.DiscussionApi.as_view(), name="api-discussion"),
    path("items/<int:item_id>/release/", api.ReleaseApi.as_view(), name="api-release"),
    path("items/<int:item_id>/history/", api.HistoryApi.as_view(), name="api-history"),
    path(
        "studies/<int:study_id>/disagreement-analytics/",
        api.DisagreementAnalyticsApi.as_view(),
        name="api-disagreement-analytics",
    ),
]
