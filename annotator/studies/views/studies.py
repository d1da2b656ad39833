"""Study pages: list, create, detail (with the selection record), settings, members, selection."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import AuthenticationForm
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotator.accounts.forms import SignupForm
from annotator.issues.filter_text import filter_names
from annotator.issues.rendering import markdown_html

from .. import services
from ..access import MANAGERS, membership_or_404, signed_in
from ..errors import StudyError
from ..forms import (
    NEW_ROUND,
    InviteForm,
    MemberForm,
    RoleForm,
    SelectionForm,
    StudyEditForm,
    StudyForm,
)
from ..models import Assignment, Invitation, Membership, Round, Selection, Study
from ..services.progress import Progress, annotator_shares, rounds_progress

Role = Membership.Role
Status = Assignment.Status
INVITE_IDS = "invite-%s"  # the members page also holds the add-member form, with its own "role"


def study_list(request: HttpRequest) -> HttpResponse:
    memberships = Membership.objects.filter(user=signed_in(request)).select_related(
        "study__codebook_version__codebook"
    )
    return render(request, "studies/study_list.html", {"memberships": memberships})


@require_http_methods(["GET", "POST"])
def study_create(request: HttpRequest) -> HttpResponse:
    form = StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            study = services.create_study(owner=request.user, **form.cleaned_data)
        except StudyError as error:
            form.add_error(None, str(error))
        else:
            return redirect(study)
    status = 400 if form.errors else 200
    return render(request, "studies/study_form.html", {"form": form}, status=status)


def study_detail(request: HttpRequest, study_id: int) -> HttpResponse:
    membership = membership_or_404(request, study_id)
    study = membership.study
    context = {
        "membership": membership,
        "study": study,
        "guidelines_html": markdown_html(study.guidelines),
        "rounds": _round_figures(membership),
        "selections": _selections(study),
        "members": study.memberships.select_related("user") if membership.is_owner else (),
        "invitations": (
            Invitation.objects.filter(study=study).live().order_by("-created_at")
            if membership.is_owner
            else ()
        ),
        "machine_on": membership.is_owner and _machine_on(study.pk),
    }
    return render(request, "studies/study_detail.html", context)


def _machine_on(study_id: int) -> bool:
    from annotator.machine.access import feature_on  # the machine app is optional to studies

    return feature_on(study_id)


def _selections(study: Study) -> list[Selection]:
    """The study's selections with the names their filters refer to read once for all (one
    query, not one per selection)."""
    selections = list(Selection.objects.filter(study=study).select_related("round"))
    names = filter_names(s.filters for s in selections)
    for selection in selections:
        selection.__dict__["_filter_names"] = names  # Selection._filter_names, a cached_property
    return selections


def _round_figures(membership: Membership) -> list[tuple[Round, object, object]]:
    """Each round with its exact figures for those who see every label, and the annotator's
    own share for an annotator: a few grouped queries, whatever the number of rounds."""
    study = membership.study
    if membership.role == Role.ANNOTATOR:
        shares, _ = annotator_shares(study=study, annotator=membership.user)
        return [(r, None, share) for r, share in shares]
    if membership.sees_all_labels:
        progress = rounds_progress(study=study)
        return [(r, progress.get(r.pk, Progress(0, 0)), None) for r in study.rounds.all()]
    return [(r, None, None) for r in study.rounds.all()]


@require_http_methods(["GET", "POST"])
def study_edit(request: HttpRequest, study_id: int) -> HttpResponse:
    study = membership_or_404(request, study_id, MANAGERS).study
    form = StudyEditForm(request.POST or None, instance=study)
    if request.method == "POST" and form.is_valid():
        try:
            services.update_study(study=study, **form.cleaned_data)
        except StudyError as error:
            form.add_error(None, str(error))
        else:
            return redirect(study)
    status = 400 if form.errors else 200
    context = {"form": form, "study": study}
    return render(request, "studies/study_edit.html", context, status=status)


@require_http_methods(["GET", "POST"])
def members(request: HttpRequest, study_id: int) -> HttpResponse:
    study = membership_or_404(request, study_id, MANAGERS).study
    form = MemberForm(request.POST or None)
    created: tuple[str, str] | None = None
    if request.method == "POST" and form.is_valid():
        try:
            created = _add_member(study, form.cleaned_data)
        except StudyError as error:
            form.add_error("username", str(error).removeprefix("field 'username': "))
        else:
            if created is None:
                return redirect("studies:members", study_id=study.pk)
            form = MemberForm()
    context = {**_members_context(study), "form": form, "created": created}
    return render(request, "studies/members.html", context, status=400 if form.errors else 200)


def _members_context(study: Study, invite_form: InviteForm | None = None) -> dict[str, object]:
    return {
        "study": study,
        "form": MemberForm(),
        "invite_form": invite_form or InviteForm(auto_id=INVITE_IDS),
        "role_choices": Role.choices,
        "members": study.memberships.select_related("user"),
        "invitations": Invitation.objects.filter(study=study).live().order_by("-created_at"),
    }


def _add_member(study: Study, data: dict[str, object]) -> tuple[str, str] | None:
    username, role = str(data["username"]).strip(), str(data["role"])
    if data["create"]:
        _, password = services.create_member_account(study=study, username=username, role=role)
        return username, password
    user = get_user_model().objects.filter(username__iexact=username).first()
    if user is None:
        raise StudyError(f"no account {username!r}; tick “Create a new account”")
    services.add_member(study=study, user=user, role=role)
    return None


@require_POST
def invite(request: HttpRequest, study_id: int) -> HttpResponse:
    study = membership_or_404(request, study_id, MANAGERS).study
    form = InviteForm(request.POST, auto_id=INVITE_IDS)
    if form.is_valid():
        try:
            services.create_invitation(study=study, user=request.user, **form.cleaned_data)
        except StudyError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, "Invitation link created: copy it from the list below.")
            return redirect("studies:members", study_id=study.pk)
    context = _members_context(study, invite_form=form)
    return render(request, "studies/members.html", context, status=400)


@require_http_methods(["GET", "POST"])
def invitation_revoke(request: HttpRequest, study_id: int, token: str) -> HttpResponse:
    """GET asks for confirmation; POST revokes. Another study's link: 404."""
    study = membership_or_404(request, study_id, MANAGERS).study
    invitation = get_object_or_404(Invitation, study=study, token=token)
    if request.method == "POST":
        services.revoke_invitation(study=study, token=token)
        messages.success(request, f"Invitation link ({invitation.role}) revoked.")
        return redirect("studies:members", study_id=study.pk)
    context = {"study": study, "invitation": invitation}
    return render(request, "studies/invitation_revoke.html", context)


@require_http_methods(["GET", "POST"])
def member_remove(request: HttpRequest, study_id: int, user_id: int) -> HttpResponse:
    """GET says what removing does and asks for confirmation; POST removes."""
    study = membership_or_404(request, study_id, MANAGERS).study
    member = get_object_or_404(study.memberships.select_related("user"), user_id=user_id)
    error = ""
    if request.method == "POST":
        try:
            released = services.remove_member(study=study, user=member.user)
        except StudyError as refused:
            error = str(refused)
        else:
            messages.success(request, _removed_message(member, released))
            return redirect("studies:members", study_id=study.pk)
    context = {
        "study": study,
        "member": member,
        "error": error,
        "open_count": _open_assignments(member),
    }
    return render(request, "studies/member_remove.html", context, status=409 if error else 200)


@require_http_methods(["GET", "POST"])
def round_close(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    """GET says what closing a round does and asks for confirmation; POST closes it."""
    study = membership_or_404(request, study_id, MANAGERS).study
    round = get_object_or_404(study.rounds, number=number)
    if request.method == "POST":
        closed = services.close_round(round=round)
        messages.success(request, f"Round {closed.number} is closed.")
        return redirect(study)
    open_count = Assignment.objects.filter(item__round=round, status=Status.ASSIGNED).count()
    context = {"study": study, "round": round, "open_count": open_count}
    return render(request, "studies/round_close.html", context)


def _open_assignments(member: Membership) -> int:
    return Assignment.objects.filter(
        item__study_id=member.study_id, annotator_id=member.user_id, status=Status.ASSIGNED
    ).count()


def _removed_message(member: Membership, released: int) -> str:
    back = f"; {released} item(s) in progress went back to the pool" if released else ""
    return f"{member.user.get_username()} was removed from the study{back}."


@require_POST
def member_role(request: HttpRequest, study_id: int, user_id: int) -> HttpResponse:
    study = membership_or_404(request, study_id, MANAGERS).study
    member = get_object_or_404(study.memberships.select_related("user"), user_id=user_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a role: owner, adjudicator or annotator.")
        return redirect("studies:members", study_id=study.pk)
    try:
        _, released = services.change_member_role(
            study=study, user=member.user, role=form.cleaned_data["role"]
        )
    except StudyError as error:
        messages.error(request, str(error))
    else:
        back = f"; {released} item(s) in progress went back to the pool" if released else ""
        name = member.user.get_username()
        messages.success(request, f"{name} is now {form.cleaned_data['role']}{back}.")
    return redirect("studies:members", study_id=study.pk)


@login_not_required
@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation link. Signed in: confirm joining. Signed out: create an account, or log
    in (throttled by django-axes like the login page), and join at once. A link that no
    longer works says why, and nothing is created."""
    try:
        invitation = services.live_invitation(token)
    except StudyError as error:
        return render(request, "studies/join.html", {"refusal": str(error)}, status=410)
    if request.method == "POST":
        return _join_post(request, invitation)
    return _join_page(request, invitation)


def _join_page(
    request: HttpRequest,
    invitation: Invitation,
    signup: SignupForm | None = None,
    login_form: AuthenticationForm | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "invitation": invitation,
        "signup": signup or SignupForm(prefix="signup"),
        "login_form": login_form or AuthenticationForm(request, prefix="login"),
    }
    return render(request, "studies/join.html", context, status=status)


def _join_post(request: HttpRequest, invitation: Invitation) -> HttpResponse:
    if request.user.is_authenticated:  # whatever the form: a signed-in user joins as themselves
        return _joined(request, invitation.token, request.user)
    if request.POST.get("action") == "signup":
        signup = SignupForm(request.POST, prefix="signup")
        if not signup.is_valid():
            return _join_page(request, invitation, signup=signup, status=400)
        return _join_new_account(request, invitation, signup)
    login_form = AuthenticationForm(request, request.POST, prefix="login")
    if not login_form.is_valid():  # authenticate(request, …): axes counts the failure
        return _join_page(request, invitation, login_form=login_form, status=400)
    login(request, login_form.get_user())
    return _joined(request, invitation.token, login_form.get_user())


def _join_new_account(
    request: HttpRequest, invitation: Invitation, signup: SignupForm
) -> HttpResponse:
    data = signup.cleaned_data
    try:
        user, membership = services.join_with_new_account(
            token=invitation.token,
            username=data["username"],
            password=data["password1"],
            email=data.get("email") or "",
        )
    except StudyError as error:
        signup.add_error(None, str(error).removeprefix("field 'username': "))
        return _join_page(request, invitation, signup=signup, status=400)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    messages.success(request, f"Welcome, {user.get_username()}: you joined as {membership.role}.")
    return redirect(membership.study)


def _joined(request: HttpRequest, token: str, user: Any) -> HttpResponse:
    try:
        membership = services.accept_invitation(token=token, user=user)
    except StudyError as error:
        return render(request, "studies/join.html", {"refusal": str(error)}, status=410)
    messages.success(request, f"You are a member of “{membership.study}” as {membership.role}.")
    return redirect(membership.study)


@require_http_methods(["GET", "POST"])
def select(request: HttpRequest, study_id: int) -> HttpResponse:
    study = membership_or_404(request, study_id, MANAGERS).study
    data = request.POST if request.method == "POST" else (request.GET or None)
    form = SelectionForm(data, study=study, initial={"kind": "issue", "stratify": True})
    preview = None
    if form.is_valid():
        if request.method == "POST":
            return _select(request, study, form)
        counts = services.preview_selection(study=study, filters=form.filters())
        preview = {"total": sum(counts.values()), "counts": counts}
    context = {"study": study, "form": form, "preview": preview}
    if getattr(request, "htmx", False) and request.method == "GET":
        return render(request, "studies/select.html#selection-preview", context)
    return render(request, "studies/select.html", context, status=400 if form.errors else 200)


def _select(request: HttpRequest, study: Study, form: SelectionForm) -> HttpResponse:
    data = form.cleaned_data
    choice = data["round"]
    try:
        with transaction.atomic():  # a refused selection leaves no new round behind
            if choice in NEW_ROUND:
                round = services.round_for_selection(study=study, kind=NEW_ROUND[choice])
            else:
                round = Round.objects.get(study=study, pk=int(choice))
            selection = services.select_issues(
                study=study,
                round=round,
                filters=form.filters(),
                sample_size=data["sample_size"],
                seed=data["seed"],
                stratify=data["stratify"],
                user=request.user,
                reliability_share=data["reliability_share"],
                reliability_seed=data["reliability_seed"],
            )
    except StudyError as error:
        form.add_error(None, str(error))
        context = {"study": study, "form": form, "preview": None}
        return render(request, "studies/select.html", context, status=400)
    messages.success(request, f"Added {selection.added} issues to round {round.number}.")
    return redirect(reverse("studies:detail", args=[study.pk]) + "#method")
