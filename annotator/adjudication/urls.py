from django.urls import path

from .views import analytics, item, lists

app_name = "adjudication"

urlpatterns = [
    path("studies/<int:study_id>/", lists.queue, name="queue"),
    path("studies/<int:study_id>/next/", lists.queue_next, name="next"),
    path("studies/<int:study_id>/items/", lists.items, name="items"),
    path("studies/<int:study_id>/relabel/", lists.relabel, name="relabel"),
    path("studies/<int:study_id>/rules/", lists.decision_rules, name="rules"),
    path("studies/<int:study_id>/analytics/", analytics.analytics, name="analytics"),
    path("items/<int:item_id>/", item.adjudicate, name="item"),
    path("items/<int:item_id>/decide/", item.decide, name="decide"),
    path("items/<int:item_id>/release/", item.release, name="release"),
    path("items/<int:item_id>/history/", item.history, name="history"),
    path("items/<int:item_id>/discussion/", item.discussion, name="discussion"),
]
