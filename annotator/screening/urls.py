from django.urls import URLPattern, path  # noqa: F401 -- pages join as they are built

app_name = "screening"

urlpatterns: list[URLPattern] = []
