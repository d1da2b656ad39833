from django.urls import path

from annotator.backup.urls import study_urlpatterns as backup_urlpatterns

from .views import annotate, dashboard, gold, studies

app_name = "studies"

urlpatterns = [
    path("", studies.study_list, name="list"),
    path("new/", studies.study_create, name="create"),
    *backup_urlpatterns,  # studies:restore, studies:backup (<int:study_id>/backup/)
    path("join/<str:token>/", studies.join, name="join"),
    path("<int:study_id>/", studies.study_detail, name="detail"),
    path("<int:study_id>/edit/", studies.study_edit, name="edit"),
    path("<int:study_id>/members/", studies.members, name="members"),
    path("<int:study_id>/invite/", studies.invite, name="invite"),
    path(
        "<int:study_id>/invitations/<str:token>/revoke/",
        studies.invitation_revoke,
        name="invitation_revoke",
    ),
    path(
        "<int:study_id>/members/<int:user_id>/remove/", studies.member_remove, name="member_remove"
    ),
    path("<int:study_id>/members/<int:user_id>/role/", studies.member_role, name="member_role"),
    path("<int:study_id>/select/", studies.select, name="select"),
    path("<int:study_id>/rounds/<int:number>/close/", studies.round_close, name="round_close"),
    path("<int:study_id>/dashboard/", dashboard.dashboard, name="dashboard"),
    path("<int:study_id>/annotate/", annotate.annotate_next, name="annotate_next"),
    path("<int:study_id>/mine/", annotate.my_items, name="mine"),
    path("items/<int:item_id>/", dashboard.item_detail, name="item"),
    path("items/<int:item_id>/gold/", gold.gold_edit, name="gold"),
    path("items/<int:item_id>/gold/remove/", gold.gold_delete, name="gold_delete"),
    path("assignments/<int:assignment_id>/", annotate.annotate, name="assignment"),
    path("assignments/<int:assignment_id>/draft/", annotate.save_draft, name="draft"),
    path("assignments/<int:assignment_id>/submit/", annotate.submit, name="submit"),
    path("assignments/<int:assignment_id>/skip/", annotate.skip, name="skip"),
    path("assignments/<int:assignment_id>/propose/", annotate.propose, name="propose"),
    path("assignments/<int:assignment_id>/feedback/", gold.feedback, name="feedback"),
]
