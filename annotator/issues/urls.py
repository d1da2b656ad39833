from django.urls import path

from . import views

app_name = "issues"

urlpatterns = [
    path("", views.issue_list, name="list"),
    path("<int:pk>/", views.issue_detail, name="detail"),
    path("import/", views.import_upload, name="import"),
    path("import/<int:pk>/", views.import_detail, name="import_detail"),
    path("sync/", views.sync_start, name="sync"),
    path("sync/<int:pk>/", views.sync_detail, name="sync_detail"),
]
