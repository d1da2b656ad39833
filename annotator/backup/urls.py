from django.urls import path

from . import views

app_name = "backup"

# The two entry points are in the studies namespace (annotator/studies/urls.py lists these):
# studies:backup (POST, a study's owner) and studies:restore (staff).
study_urlpatterns = [
    path("restore/", views.restore_upload, name="restore"),
    path("<int:study_id>/backup/", views.start_backup, name="backup"),
]

urlpatterns = [
    path("<int:pk>/", views.job_page, name="job"),
    path("<int:pk>/download/", views.download, name="download"),
    path("restore/<str:token>/", views.restore_confirm, name="confirm"),
]
