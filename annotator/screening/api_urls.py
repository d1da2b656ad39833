from django.urls import URLPattern

urlpatterns: list[URLPattern] = []  # the screening API routes join as they are built
