from django.urls import path

from . import api

urlpatterns = [
    path("studies/", api.StudyListApi.as_view(), name="api-study-list"),
    path("studies/create/", api.StudyCreateApi.as_view(), name="api-study-create"),
    path("studies/<int:study_id>/", api.StudyDetailApi.as_view(), name="api-study-detail"),
    path("studies/<int:study_id>/members/", api.MemberAddApi.as_view(), name="api-member-add"),
    path(
        "studies/<int:study_id>/selections/",
        api.SelectionCreateApi.as_view(),
        name="api-selection-create",
    ),
    path("studies/<int:study_id>/next-item/", api.NextItemApi.as_view(), name="api-next-item"),
    path(
        "studies/<int:study_id>/annotations/",
        api.AnnotationListApi.as_view(),
        name="api-annotation-list",
    ),
    path("studies/<int:study_id>/progress/", api.ProgressApi.as_view(), name="api-progress"),
    path(
        "assignments/<int:assignment_id>/",
        api.AssignmentDetailApi.as_view(),
        name="api-assignment-detail",
    ),
    path("assignments/<int:assignment_id>/draft/", api.DraftSaveApi.as_view(), name="api-draft"),
    path("assignments/<int:assignment_id>/submit/", api.SubmitApi.as_view(), name="api-submit"),
    path("assignments/<int:assignment_id>/skip/", api.SkipApi.as_view(), name="api-skip"),
]
