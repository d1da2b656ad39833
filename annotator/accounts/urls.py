from django.contrib.auth import views as auth_views
from django.urls import path

from . import github, github_views, views

app_name = "accounts"

urlpatterns = [
    path("tokens/", views.token_list, name="tokens"),
    path("tokens/<int:pk>/revoke/", views.token_revoke, name="revoke"),
    path("github/", github_views.github_token, name="github"),
    path("github/forget/", github_views.github_token_forget, name="github_forget"),
]

# Sign in with GitHub (github.py): allauth reverses these names, so no namespace. Each answers
# 404 while the operator has not configured it. GitHub's OAuth app must name the callback,
# https://HOST/account/github/login/callback/, as its authorization callback URL.
github_urlpatterns = [
    path("github/login/", github.github_login, name="github_login"),
    path("github/login/callback/", github.github_callback, name="github_callback"),
    path("github/cancelled/", github.login_cancelled, name="socialaccount_login_cancelled"),
    path("github/error/", github.login_error, name="socialaccount_login_error"),
    path("github/signup/", github.signup_refused, name="socialaccount_signup"),
]

# Password change and reset: Django's views and their default URL names (no namespace, so the
# views' own success URLs and the reset e-mail's link resolve), under /account/ beside the
# tokens (annotator/urls.py). Templates: templates/registration/password_*.
password_urlpatterns = [
    path("password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path(
        "password/changed/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("password/reset/", auth_views.PasswordResetView.as_view(), name="password_reset"),
    path(
        "password/reset/sent/",
        auth_views.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "password/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "password/reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
]
