from django.urls import path

from . import views, views_analysis, views_prior

app_name = "exports"

urlpatterns = [
    path("studies/<int:study_id>/", views.export_start, name="start"),
    path("studies/<int:study_id>/pseudonyms/", views.pseudonyms, name="pseudonyms"),
    path("<int:pk>/", views.export_job, name="job"),
    path("<int:pk>/download/", views.export_download, name="download"),
    path("<int:pk>/card/", views.export_card, name="card"),
    path("studies/<int:study_id>/analysis/", views_analysis.analysis, name="analysis"),
    path(
        "studies/<int:study_id>/analysis/issues/",
        views_analysis.analysis_issues,
        name="analysis_issues",
    ),
    path("prior-labels/", views_prior.prior_upload, name="prior_upload"),
    path("prior-labels/<str:token>/map/", views_prior.prior_map, name="prior_map"),
    path("prior-labels/<str:token>/review/", views_prior.prior_review, name="prior_review"),
]
