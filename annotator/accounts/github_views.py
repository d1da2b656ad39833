"""The account page's GitHub section: whether syncs you start use your own GitHub token, paste
one, forget it (after a confirmation), and connect your GitHub login to this account. The
token is never shown back, not even in part."""

from __future__ import annotations

from typing import Any

from allauth.socialaccount.models import SocialAccount
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from .errors import GitHubTokenError
from .forms import GitHubTokenForm
from .github import github_configured
from .models import GitHubToken
from .services import forget_github_token, github_tokens_enabled, store_github_token


@sensitive_post_parameters("token")
@require_http_methods(["GET", "POST"])
def github_token(request: HttpRequest) -> HttpResponse:
    """GET shows the state; POST stores a pasted token and redirects (nothing to show once)."""
    user: Any = request.user  # signed in (LoginRequiredMiddleware)
    form = GitHubTokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            store_github_token(
                user=request.user,
                token=form.cleaned_data["token"],
                source=GitHubToken.Source.PASTED,
            )
        except GitHubTokenError as error:
            form.add_error("token", str(error).removeprefix("field 'token': "))
        else:
            messages.success(request, "Your GitHub token is stored, encrypted.")
            return redirect("accounts:github")
    context = {
        "form": form,
        "stored": GitHubToken.objects.filter(user=user).first(),
        "enabled": github_tokens_enabled(),
        "sign_in": github_configured(),
        "connected": SocialAccount.objects.filter(user=user, provider="github").first(),
    }
    response = render(request, "accounts/github.html", context, status=400 if form.errors else 200)
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
def github_token_forget(request: HttpRequest) -> HttpResponse:
    """GET asks for confirmation (the #forget-confirm partial for htmx); POST deletes."""
    if request.method == "POST":
        if forget_github_token(user=request.user):
            messages.success(
                request, "Your GitHub token is deleted; syncs you start use the server's."
            )
        else:
            messages.info(request, "No GitHub token was stored.")
        return redirect("accounts:github")
    template = "accounts/github_forget.html"
    if getattr(request, "htmx", False):
        template += "#forget-confirm"
    user: Any = request.user
    stored = GitHubToken.objects.filter(user=user).first()
    return render(request, template, {"stored": stored})
