from django.urls import path

from . import views, views_categories, views_proposals, views_rules

app_name = "taxonomy"

urlpatterns = [
    path("", views.codebook_list, name="list"),
    path("import/", views.codebook_import, name="import"),
    path("<int:pk>/", views.codebook_detail, name="codebook"),
    path("<int:pk>/draft/", views.draft_start, name="draft"),
    path("<int:pk>/proposals/", views_proposals.proposal_list, name="proposals"),
    path("versions/<int:pk>/", views.version_detail, name="version"),
    path("versions/<int:pk>/diff/", views.version_diff, name="diff"),
    path("versions/<int:pk>/publish/", views.version_publish, name="publish"),
    path("versions/<int:pk>/discard/", views.version_discard, name="discard"),
    path("versions/<int:pk>/guideline/", views.version_guideline, name="guideline"),
    path("versions/<int:pk>/export.<str:fmt>", views.version_export, name="export"),
    path("versions/<int:pk>/rules/add/", views_rules.rule_add, name="rule_add"),
    path("versions/<int:pk>/rule-breaks/", views_rules.version_rule_breaks, name="rule_breaks"),
    path("rules/<int:pk>/delete/", views_rules.rule_delete, name="rule_delete"),
    path("facets/<int:pk>/add/", views_categories.category_add, name="category_add"),
    path("categories/<int:pk>/", views_categories.category_row, name="category_row"),
    path("categories/<int:pk>/edit/", views_categories.category_edit, name="category_edit"),
    path(
        "categories/<int:pk>/reorder/", views_categories.category_reorder, name="category_reorder"
    ),
    path(
        "categories/<int:pk>/<str:action>/",
        views_categories.category_action,
        name="category_action",
    ),
    path("proposals/<int:pk>/resolve/", views_proposals.proposal_resolve, name="proposal_resolve"),
]
