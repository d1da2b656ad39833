from django.urls import URLPattern, path  # noqa: F401 -- API routes join as they are built

urlpatterns: list[URLPattern] = []
