from django.urls import path

from . import api

urlpatterns = [
    path("studies/<int:study_id>/exports/", api.ExportListCreateApi.as_view(), name="api-exports"),
    path("exports/<int:pk>/", api.ExportDetailApi.as_view(), name="api-export"),
    path("exports/<int:pk>/download/", api.ExportDownloadApi.as_view(), name="api-export-download"),
    path("exports/<int:pk>/card/", api.ExportCardApi.as_view(), name="api-export-card"),
    path("studies/<int:study_id>/analysis/", api.AnalysisApi.as_view(), name="api-analysis"),
]
urlpatterns += [
    path("prior-labels/inspect/", api.PriorInspectApi.as_view(), name="api-prior-inspect"),
    path("prior-labels/import/", api.PriorImportApi.as_view(), name="api-prior-import"),
]
