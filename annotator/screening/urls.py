from django.urls import URLPattern

app_name = "screening"

urlpatterns: list[URLPattern] = []  # the screening pages join as they are built
