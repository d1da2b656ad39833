"""Sign in with GitHub, through django-allauth's OAuth flow, when the operator configures it
(settings GITHUB_OAUTH_CLIENT_ID, …; absent, every route here answers 404 and no page shows a
button). Local logins, sign-ups and django-axes' lockout are untouched: allauth's own account
pages are not routed, only the GitHub login, its callback and three small answer pages.

What this module decides, over allauth's defaults:
- the user name of an account made from a GitHub login is the login, made unique (`alice`,
  then `alice-2`…) and never one of the pseudonymous rater names (raters.py): a GitHub login
  never lands in an existing local account by name;
- a GitHub login whose e-mail address (one GitHub verified; the others are dropped) a local
  account already has is refused with a page saying how to connect GitHub to that account
  (log in, then connect on the account page), rather than a second account or a silent
  takeover (and no token waits in the session for allauth's sign-up form);
- the access token is kept encrypted (services.store_github_token), never in allauth's
  SocialToken table (SOCIALACCOUNT_STORE_TOKENS = False);
- GitHub's URLs are read from settings at each request (allauth reads them once at import),
  so GITHUB_OAUTH_URL can point at GitHub Enterprise or a test server.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import wraps
from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.internal.flows.signup import clear_pending_signup
from allauth.socialaccount.models import SocialLogin
from allauth.socialaccount.providers.github.views import (
    GitHubOAuth2Adapter as AllauthGitHubAdapter,
)
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from .errors import GitHubTokenError
from .models import GitHubToken
from .raters import RATER_NAME, RESERVED_MESSAGE
from .services import github_tokens_enabled, store_github_token

logger = logging.getLogger(__name__)
GITHUB_COM = "https://github.com"
USERNAME_LENGTH = 150


def provider_settings() -> dict[str, Any]:
    github: dict[str, Any] = settings.SOCIALACCOUNT_PROVIDERS.get("github", {})
    return github


def github_configured() -> bool:
    """Whether the operator configured Sign in with GitHub (an OAuth app's id)."""
    return bool(provider_settings().get("APPS"))


def unique_username(login: str) -> str:
    """A free user name for the GitHub login `login`: the login itself, `login-2`, … (compared
    without case, as sign-up does), prefixed `gh-` where it would read as a rater name."""
    base = re.sub(r"[^\w.@+-]", "", login)[: USERNAME_LENGTH - 8] or "github-user"
    if RATER_NAME.match(base):
        base = f"gh-{base}"
    taken = {
        name.lower()
        for name in get_user_model()
        .objects.filter(username__iregex=rf"^{re.escape(base)}(-[0-9]+)?$")
        .values_list("username", flat=True)
    }
    candidate, number = base, 1
    while candidate.lower() in taken:
        number += 1
        candidate = f"{base}-{number}"
    return candidate


class GitHubOAuth2Adapter(AllauthGitHubAdapter):
    """allauth's GitHub adapter with its URLs read from settings when used."""

    @property
    def web_url(self) -> str:
        return str(provider_settings().get("GITHUB_URL") or GITHUB_COM).rstrip("/")

    @property
    def api_url(self) -> str:
        web = self.web_url
        return "https://api.github.com" if web == GITHUB_COM else f"{web}/api/v3"

    @property
    def access_token_url(self) -> str:
        return f"{self.web_url}/login/oauth/access_token"

    @property
    def authorize_url(self) -> str:
        return f"{self.web_url}/login/oauth/authorize"

    @property
    def profile_url(self) -> str:
        return f"{self.api_url}/user"

    @property
    def emails_url(self) -> str:
        return f"{self.api_url}/user/emails"

    def get_provider(self) -> Any:
        provider = super().get_provider()
        provider.oauth2_adapter_class = type(self)  # its redirect builds the authorize URL
        return provider

    def complete_login(self, request: HttpRequest, app: Any, token: Any, **kwargs: Any) -> Any:
        login = super().complete_login(request, app, token, **kwargs)
        # GitHub's answer to the code exchange names the scopes the person granted.
        response = kwargs.get("response") or {}
        login.granted_scopes = str(response.get("scope", ""))[:200]
        return login


def _when_configured(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not github_configured():
            raise Http404("Sign in with GitHub is not configured on this server.")
        return view(request, *args, **kwargs)

    return login_not_required(wrapped)


github_login = _when_configured(OAuth2LoginView.adapter_view(GitHubOAuth2Adapter))
github_callback = _when_configured(OAuth2CallbackView.adapter_view(GitHubOAuth2Adapter))


def answer_page(request: HttpRequest, title: str, text: str, status: int = 200) -> HttpResponse:
    context = {"title": title, "text": text}
    return render(request, "accounts/github_answer.html", context, status=status)


@_when_configured
def login_cancelled(request: HttpRequest) -> HttpResponse:
    return answer_page(
        request,
        "Sign-in with GitHub cancelled",
        "You did not authorize this site on GitHub, so nothing was changed here.",
    )


@_when_configured
def login_error(request: HttpRequest) -> HttpResponse:
    return answer_page(
        request,
        "Sign-in with GitHub failed",
        "GitHub did not confirm who you are. Nothing was changed here; try again.",
        status=401,
    )


@_when_configured
def signup_refused(request: HttpRequest) -> HttpResponse:
    """allauth sends a GitHub login it cannot make an account of here (its sign-up form,
    which this site does not offer)."""
    clear_pending_signup(request)
    return answer_page(
        request,
        "No account made",
        "An account could not be made from this GitHub login. Log in with a password, or "
        "ask your study's owner for an invitation link.",
        status=400,
    )


def _keep_token(user: Any, sociallogin: SocialLogin) -> None:
    """Store the token the person granted, encrypted, unless they pasted one (theirs may
    reach private repositories the sign-in's scopes do not) or no key is configured."""
    token = getattr(sociallogin, "token", None)
    if not github_tokens_enabled() or token is None or not token.token:
        return
    if GitHubToken.objects.filter(user=user, source=GitHubToken.Source.PASTED).exists():
        return
    try:
        _store_granted(user, sociallogin, token.token)
    except GitHubTokenError as error:  # a malformed key (`manage.py check` says so): sign in
        logger.error("GitHub token of user #%s not kept: %s", user.pk, error)


def _store_granted(user: Any, sociallogin: SocialLogin, token: str) -> None:
    store_github_token(
        user=user,
        token=token,
        source=GitHubToken.Source.SIGN_IN,
        scopes=getattr(sociallogin, "granted_scopes", ""),
        github_login=str(sociallogin.account.extra_data.get("login", "")),
    )


def _keep_verified_emails(sociallogin: SocialLogin) -> set[str]:
    """Drop the addresses GitHub has not verified (anyone can add any address to a GitHub
    account): the new account gets a verified one or none, and only the person's own verified
    addresses are compared with local accounts'. Returns those, in lower case."""
    verified = [address for address in sociallogin.email_addresses if address.verified]
    sociallogin.email_addresses = verified
    emails = {address.email.lower() for address in verified}
    user = sociallogin.user
    if user is not None and user.email.lower() not in emails:
        primary = [a.email for a in verified if a.primary] or [a.email for a in verified]
        user.email = primary[0] if primary else ""
    return emails


def _emails_taken(emails: set[str]) -> bool:
    """Whether an account here has one of `emails`, on the user (as typed at sign-up, so
    compared without case, which allauth's lookup does not) or among allauth's addresses."""
    if not emails:
        return False
    query = Q()
    for email in emails:
        query |= Q(email__iexact=email)
    return (
        get_user_model().objects.filter(query).exists()
        or EmailAddress.objects.filter(query).exists()
    )


class GitHubAccountAdapter(DefaultSocialAccountAdapter):
    """allauth's hooks for GitHub logins (settings.SOCIALACCOUNT_ADAPTER)."""

    def is_open_for_signup(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return github_configured()

    def populate_user(self, request: HttpRequest, sociallogin: SocialLogin, data: Any) -> Any:
        user = super().populate_user(request, sociallogin, data)
        user.username = unique_username(str(data.get("username") or ""))
        return user

    def pre_social_login(self, request: HttpRequest, sociallogin: SocialLogin) -> None:
        if sociallogin.state.get("process") == "connect":
            owner = request.user
            if owner.is_authenticated and sociallogin.account.user_id in (None, owner.pk):
                _keep_token(owner, sociallogin)
            return  # allauth refuses a GitHub account connected to someone else
        if sociallogin.is_existing:
            _keep_token(sociallogin.user, sociallogin)
            return
        self._refuse_taken_email(request, sociallogin)

    def _refuse_taken_email(self, request: HttpRequest, sociallogin: SocialLogin) -> None:
        if _emails_taken(_keep_verified_emails(sociallogin)):
            raise ImmediateHttpResponse(
                answer_page(
                    request,
                    "An account here already has your e-mail address",
                    "No second account was made from your GitHub login, and it was not joined "
                    "to that account. If the account is yours, log in with its password, then "
                    "connect GitHub on your account page (GitHub token); after that, Sign in "
                    "with GitHub opens it.",
                    status=409,
                )
            )

    def save_user(self, request: HttpRequest, sociallogin: SocialLogin, form: Any = None) -> Any:
        user = super().save_user(request, sociallogin, form)
        _keep_token(user, sociallogin)
        login = str(sociallogin.account.extra_data.get("login", ""))
        if login and user.username.lower() != login.lower():
            messages.info(
                request,
                f"Your account here is named {user.username}: the name {login} is not "
                "available here. If you already had an account, log in to it and connect "
                "GitHub there instead.",
            )
        return user

    def get_connect_redirect_url(self, request: HttpRequest, socialaccount: Any) -> str:
        return reverse("accounts:github")


class AccountAdapter(DefaultAccountAdapter):
    """allauth's account hooks (settings.ACCOUNT_ADAPTER); only GitHub logins reach them."""

    def login(self, request: HttpRequest, user: Any) -> None:
        # allauth would pick the first backend, django-axes', which cannot load users back.
        user.backend = "django.contrib.auth.backends.ModelBackend"
        super().login(request, user)

    def clean_username(self, username: str, shallow: bool = False) -> str:
        if RATER_NAME.match(username or ""):
            raise ValidationError(RESERVED_MESSAGE)
        return str(super().clean_username(username, shallow=shallow))

    def populate_username(self, request: HttpRequest, user: Any) -> None:
        user.username = unique_username(user.username or "")

    def respond_user_inactive(self, request: HttpRequest, user: Any) -> HttpResponse:
        messages.error(request, "This account is inactive; ask an administrator.")
        return redirect("login")
