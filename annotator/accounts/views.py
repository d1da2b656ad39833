"""The API tokens page: list one's own tokens, create one (its secret shown once), revoke one
after a confirmation step. Other users' tokens are 404, as if they did not exist."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from .errors import TokenError
from .forms import TokenForm
from .models import ApiToken
from .services import create_api_token, revoke_api_tokens


@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """GET lists; POST creates and answers with the page (or, for htmx, the #tokens partial)
    holding the secret. No redirect after the POST: the secret must not be kept anywhere (not
    even in the session, which is stored in the database) to survive one."""
    form = TokenForm(request.POST or None)
    context: dict[str, object] = {"form": form}
    if request.method == "POST" and form.is_valid():
        try:
            token, secret = create_api_token(
                user=request.user, name=form.cleaned_data["name"], days=form.cleaned_data["days"]
            )
        except TokenError as error:
            form.add_error(None, str(error))
        else:
            context.update(form=TokenForm(), created=token, secret=secret)
    context["tokens"] = ApiToken.objects.owned_by(request.user)
    if getattr(request, "htmx", False):
        # htmx swaps only 2xx answers: errors in the form come back as 200 to be shown.
        response = render(request, "accounts/tokens.html#tokens", context)
    else:
        response = render(
            request, "accounts/tokens.html", context, status=400 if form.errors else 200
        )
    response["Cache-Control"] = "no-store"  # the secret must not linger in any cache
    return response


@require_http_methods(["GET", "POST"])
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks for confirmation (the #revoke-confirm partial for htmx); POST revokes."""
    token = get_object_or_404(ApiToken.objects.owned_by(request.user), pk=pk)
    if request.method == "POST":
        if revoke_api_tokens(tokens=[token]):
            messages.success(request, f"Token “{token.name}” (ann_{token.prefix}…) revoked.")
        else:
            messages.info(request, f"Token “{token.name}” was already revoked.")
        return redirect("accounts:tokens")
    template = "accounts/token_revoke.html"
    if getattr(request, "htmx", False):
        template += "#revoke-confirm"
    return render(request, template, {"token": token})
