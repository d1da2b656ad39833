from django.urls import path

from . import views

app_name = "machine"

urlpatterns = [
    path("studies/<int:study_id>/", views.raters, name="raters"),
    path("studies/<int:study_id>/labels-shown/", views.labels_shown, name="labels_shown"),
    path("raters/<int:rater_id>/", views.rater_detail, name="rater"),
    path("raters/<int:rater_id>/start/", views.start, name="start"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("calls/<int:call_id>/", views.call_detail, name="call"),
]
