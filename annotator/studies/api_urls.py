from django.urls import path

from . import api, api_more

urlpatterns = [
    path("studies/", api.StudyListApi.as_view(), name="api-study-list"),
    path("studies/create/", api.StudyCreateApi.as_view(), name="api-study-create"),
    path("studies/<int:study_id>/", api.StudyDetailApi.as_view(), name="api-study-detail"),
    path("studies/<int:study_id>/members/", api.MemberAddApi.as_view(), name="api-member-add"),
    path(
        "studies/<int:study_id>/members/<int:user_id>/",
        api.MemberApi.as_view(),
        name="api-member",
    ),
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
    path(
        "assignments/<int:assignment_id>/feedback/",
        api.FeedbackApi.as_view(),
        name="api-feedback",
    ),
    # api_more: study update, rounds, items, one's own assignments, selection records, invitations
    path(
        "studies/<int:study_id>/update/",
        api_more.StudyUpdateApi.as_view(),
        name="api-study-update",
    ),
    path("studies/<int:study_id>/rounds/", api_more.RoundListApi.as_view(), name="api-round-list"),
    path(
        "studies/<int:study_id>/rounds/create/",
        api_more.RoundCreateApi.as_view(),
        name="api-round-create",
    ),
    path(
        "studies/<int:study_id>/rounds/<int:number>/close/",
        api_more.RoundCloseApi.as_view(),
        name="api-round-close",
    ),
    path("studies/<int:study_id>/items/", api_more.ItemListApi.as_view(), name="api-item-list"),
    path(
        "studies/<int:study_id>/my-assignments/",
        api_more.MyAssignmentListApi.as_view(),
        name="api-my-assignments",
    ),
    path(
        "studies/<int:study_id>/selections/list/",
        api_more.SelectionListApi.as_view(),
        name="api-selection-list",
    ),
    path(
        "studies/<int:study_id>/invitations/",
        api_more.InvitationListApi.as_view(),
        name="api-invitation-list",
    ),
    path(
        "studies/<int:study_id>/invitations/create/",
        api_more.InvitationCreateApi.as_view(),
        name="api-invitation-create",
    ),
    path(
        "studies/<int:study_id>/invitations/<str:token>/revoke/",
        api_more.InvitationRevokeApi.as_view(),
        name="api-invitation-revoke",
    ),
]
