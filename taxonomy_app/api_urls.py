from django.urls import path

from . import api, api_proposals, api_rules

urlpatterns = [
    path("codebooks/", api.CodebookListApi.as_view(), name="api-codebook-list"),
    path("codebooks/import/", api.CodebookImportApi.as_view(), name="api-codebook-import"),
    path("codebooks/<int:pk>/", api.CodebookDetailApi.as_view(), name="api-codebook-detail"),
    path("codebooks/<int:pk>/draft/", api.DraftStartApi.as_view(), name="api-codebook-draft"),
    path("codebook-versions/<int:pk>/", api.VersionDetailApi.as_view(), name="api-version-detail"),
    path(
        "codebook-versions/<int:pk>/publish/",
        api.VersionPublishApi.as_view(),
        name="api-version-publish",
    ),
    path("codebook-versions/<int:pk>/diff/", api.VersionDiffApi.as_view(), name="api-version-diff"),
    path(
        "codebook-versions/<int:pk>/export/<str:fmt>/",
        api.VersionExportApi.as_view(),
        name="api-version-export",
    ),
    path("codebook-versions/<int:pk>/facets/", api.FacetListApi.as_view(), name="api-facet-list"),
    path(
        "codebook-versions/<int:pk>/rules/", api_rules.RuleListApi.as_view(), name="api-rule-list"
    ),
    path("rules/<int:pk>/", api_rules.RuleDetailApi.as_view(), name="api-rule-detail"),
    path("facets/<int:pk>/", api.FacetDetailApi.as_view(), name="api-facet-detail"),
    path("facets/<int:pk>/categories/", api.CategoryListApi.as_view(), name="api-category-list"),
    path("categories/<int:pk>/", api.CategoryDetailApi.as_view(), name="api-category-detail"),
    path("categories/<int:pk>/move/", api.CategoryMoveApi.as_view(), name="api-category-move"),
    path(
        "categories/<int:pk>/archive/",
        api.CategoryArchiveApi.as_view(),
        name="api-category-archive",
    ),
    path("categories/<int:pk>/merge/", api.CategoryMergeApi.as_view(), name="api-category-merge"),
    path("categories/<int:pk>/split/", api.CategorySplitApi.as_view(), name="api-category-split"),
    path("proposals/", api_proposals.ProposalListApi.as_view(), name="api-proposal-list"),
    path(
        "proposals/<int:pk>/accept/",
        api_proposals.ProposalAcceptApi.as_view(),
        name="api-proposal-accept",
    ),
    path(
        "proposals/<int:pk>/map/", api_proposals.ProposalMapApi.as_view(), name="api-proposal-map"
    ),
    path(
        "proposals/<int:pk>/reject/",
        api_proposals.ProposalRejectApi.as_view(),
        name="api-proposal-reject",
    ),
]
