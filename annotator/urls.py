from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularSwaggerSplitView

from annotator.accounts.urls import github_urlpatterns, password_urlpatterns
from annotator.api_schema import CachedSchemaView

# Swagger UI's files come from drf-spectacular-sidecar (our static files) and its start-up script
# from the split view as a file, so the page needs no CDN and no inline script; React styles it
# with style attributes, so this page alone allows inline styles.
api_docs = csp_update({"style-src": [UNSAFE_INLINE]})(
    # GET and HEAD only: DRF would answer OPTIONS through the page's HTML renderer, which has
    # no template for it (a 500); tests/security/test_permission_matrix.py probes every method.
    SpectacularSwaggerSplitView.as_view(url_name="api-schema", http_method_names=["get", "head"])
)

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="issues:list"), name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("issues/", include("annotator.issues.urls")),
    path("studies/", include("annotator.studies.urls")),
    path("codebooks/", include("taxonomy_app.urls")),
    path("agreement/", include("annotator.agreement.urls")),
    path("adjudication/", include("annotator.adjudication.urls")),
    path("exports/", include("annotator.exports.urls")),
    path("backups/", include("annotator.backup.urls")),
    path("screening/", include("annotator.screening.urls")),
    path("machine/", include("annotator.machine.urls")),
    path("similarity/", include("annotator.similarity.urls")),
    path("account/", include("annotator.accounts.urls")),
    path("account/", include(password_urlpatterns)),  # Django's names, no namespace
    path("account/", include(github_urlpatterns)),  # Sign in with GitHub, allauth's names
    path("api/", include("annotator.issues.api_urls")),
    path("api/", include("taxonomy_app.api_urls")),
    path("api/", include("annotator.studies.api_urls")),
    path("api/", include("annotator.agreement.api_urls")),
    path("api/", include("annotator.adjudication.api_urls")),
    path("api/", include("annotator.exports.api_urls")),
    path("api/", include("annotator.accounts.api_urls")),
    path("api/", include("annotator.screening.api_urls")),
    path("api/", include("annotator.machine.api_urls")),
    path("api/", include("annotator.similarity.api_urls")),
    # generated once per process (annotator/api_schema.py): it changes only with the code
    path("api/schema/", CachedSchemaView.as_view(), name="api-schema"),
    path("api/docs/", api_docs, name="api-docs"),
]

# A database error raised outside a view answers 503 as well (annotator/middleware.py).
handler500 = "annotator.middleware.server_error"
