"""Study pages: list, create, detail (with the selection record), settings, members, selection."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotator.issues.rendering import markdown_html

from .. import services
from ..access import MANAGERS, membership_or_404, signed_in
from ..errors import StudyError
from ..forms import NEW_ROUND, InviteForm, MemberForm, SelectionForm, StudyEditForm, StudyForm
from ..models import Membership, Round, Selection, Study
from ..services.progress import annotator_progress, round_progress

Role = Membership.Role


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
    rounds = list(study.rounds.all())
    context = {
        "membership": membership,
        "study": study,
        "guidelines_html": markdown_html(study.guidelines),
        "rounds": [(r, round_progress(round_id=r.pk), _mine(membership, r)) for r in rounds],
        "selections": Selection.objects.filter(study=study).select_related("round"),
        "members": study.memberships.select_related("user") if membership.is_owner else (),
        "invitations": study.invitations.all() if membership.is_owner else (),
    }
    return render(request, "studies/study_detail.html", context)


def _mine(membership: Membership, round: Round) -> object:
    if membership.role != Role.ANNOTATOR:
        return None
    return annotator_progress(round_id=round.pk, annotator=membership.user)


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
    context = {
        "study": study,
        "form": form,
        "invite_form": InviteForm(),
        "created": created,
        "members": study.memberships.select_related("user"),
        "invitations": study.invitations.all(),
    }
    return render(request, "studies/members.html", context, status=400 if form.errors else 200)


def _add_member(study: object, data: dict[str, object]) -> tuple[str, str] | None:
    username, role = str(data["username"]).strip(), str(data["role"])
    if data["create"]:
        _, password = services.create_member_account(study=study, username=username, role=role)  # type: ignore[arg-type]
        return username, password
    user = get_user_model().objects.filter(username__iexact=username).first()
    if user is None:
        raise StudyError(f"no account {username!r}; tick “Create a new account”")
    services.add_member(study=study, user=user, role=role)  # type: ignore[arg-type]
    return None


@require_POST
def invite(request: HttpRequest, study_id: int) -> HttpResponse:
    study = membership_or_404(request, study_id, MANAGERS).study
    form = InviteForm(request.POST)
    if form.is_valid():
        services.create_invitation(study=study, role=form.cleaned_data["role"], user=request.user)
    return redirect("studies:members", study_id=study.pk)


@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, token: str) -> HttpResponse:
    if request.method == "POST":
        try:
            membership = services.accept_invitation(token=token, user=request.user)
        except StudyError as error:
            messages.error(request, str(error))
            return redirect("studies:list")
        return redirect(membership.study)
    return render(request, "studies/join.html", {"token": token})


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
    )
    messages.success(request, f"Added {selection.added} issues to round {round.number}.")
    return redirect(reverse("studies:detail", args=[study.pk]) + "#method")
