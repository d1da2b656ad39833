from django.urls import path

from . import api

_round = "studies/<int:study_id>/screening/<int:number>/"

urlpatterns = [
    path(
        "studies/<int:study_id>/screening/",
        api.ScreeningRoundCreateApi.as_view(),
        name="api-screening-create",
    ),
    path(_round, api.ScreeningPanelApi.as_view(), name="api-screening-panel"),
    path(f"{_round}plan/", api.ScreeningPlanApi.as_view(), name="api-screening-plan"),
    path(f"{_round}retrain/", api.ScreeningRetrainApi.as_view(), name="api-screening-retrain"),
    path(f"{_round}audit/", api.ScreeningAuditApi.as_view(), name="api-screening-audit"),
    path(f"{_round}include/", api.ScreeningIncludeApi.as_view(), name="api-screening-include"),
]
