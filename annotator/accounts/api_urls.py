from django.urls import path

from . import api

urlpatterns = [
    path("tokens/", api.TokenListApi.as_view(), name="api-token-list"),
    path("tokens/<int:pk>/", api.TokenApi.as_view(), name="api-token"),
]
