"""Codebook pages: the list and import, a version's tree, drafts, the diff, publishing, the
printable guideline and exports. Category editing is in views_categories, proposals in
views_proposals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from . import services
from .api import export_response
from .errors import CodebookError
from .formats import CodebookFormatError
from .forms import ConfirmForm, ImportForm, PublishForm, RuleForm, add_service_error
from .models import Category, Codebook, CodebookVersion, Facet, LabelRule
from .refi_qda import name_from_filename
from .rules import describe
from .services.rules import facet_infos, rule_of, rule_texts, version_rules


def posted(request: HttpRequest) -> QueryDict | None:
    """The submitted data of a POST (even an empty one), None for a GET: binds forms."""
    return request.POST if request.method == "POST" else None


def require_owner(request: HttpRequest, codebook: Codebook) -> None:
    if not codebook.can_edit(request.user):
        raise PermissionDenied("Only the codebook's owner can change it.")


@dataclass
class Row:
    """A category with its place in the tree, as the pages list them."""

    category: Category
    depth: int
    first: bool
    last: bool


def tree_rows(categories: list[Category]) -> list[Row]:
    """Categories in tree order (each parent before its children, siblings by order)."""
    children: dict[int | None, list[Category]] = {}
    for category in sorted(categories, key=lambda c: (c.order, c.pk)):
        children.setdefault(category.parent_id, []).append(category)
    rows: list[Row] = []

    def visit(parent: int | None, depth: int) -> None:
        siblings = children.get(parent, [])
        for index, category in enumerate(siblings):
            rows.append(Row(category, depth, index == 0, index == len(siblings) - 1))
            visit(category.pk, depth + 1)

    visit(None, 0)
    return rows


class FacetTree(TypedDict):
    facet: Facet
    rows: list[Row]
    rules: NotRequired[tuple[str, ...]]  # the facet's label rules in words


def facet_trees(version: CodebookVersion) -> list[FacetTree]:
    """Each facet with its categories in tree order and its label rules in words."""
    facets = list(
        version.facets.prefetch_related(
            Prefetch("categories", queryset=Category.objects.order_by("order", "pk"))
        )
    )
    categories = [c for f in facets for c in f.categories.all()]
    texts = rule_texts(version_rules(version), facet_infos(facets, categories))
    return [
        {"facet": f, "rows": tree_rows(list(f.categories.all())), "rules": texts[f.key]}
        for f in facets
    ]


def facet_tree(facet: Facet) -> FacetTree:
    return {"facet": facet, "rows": tree_rows(list(facet.categories.order_by("order", "pk")))}


def codebook_list(request: HttpRequest) -> HttpResponse:
    return _list_page(request, ImportForm())


def _list_page(request: HttpRequest, form: ImportForm, status: int = 200) -> HttpResponse:
    context = {"codebooks": Codebook.objects.prefetch_related("versions"), "form": form}
    return render(request, "taxonomy_app/codebook_list.html", context, status=status)


@require_POST
def codebook_import(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST, request.FILES)
    if form.is_valid():
        target = form.cleaned_data["codebook"]
        if target is not None:
            require_owner(request, target)
        try:
            upload = form.cleaned_data["file"]
            version = services.import_codebook(
                data=upload.read(),
                fmt=form.cleaned_data["format"],
                codebook=target,
                publish=form.cleaned_data["publish"],
                user=request.user,
                name=name_from_filename(upload.name),  # names a .qdc from another tool
            )
        except (CodebookError, CodebookFormatError) as error:
            form.add_error("file", f"{error}. Nothing was imported.")
        else:
            messages.success(request, f"Imported {version.codebook} v{version.number}.")
            return redirect(version)
    return _list_page(request, form, status=400)


def codebook_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The version an owner works on (the draft), else the latest published one."""
    codebook = get_object_or_404(Codebook, pk=pk)
    draft = codebook.draft() if codebook.can_edit(request.user) else None
    version = draft or codebook.latest_published() or codebook.versions.first()
    if version is None:
        raise Http404("This codebook has no versions.")
    return redirect(version)


def version_detail(
    request: HttpRequest, pk: int, rule_form: RuleForm | None = None
) -> HttpResponse:
    """A version's facets, categories and label rules; a draft's owner edits them here (a
    rule refused by the service comes back as `rule_form`, with its errors, status 400)."""
    version = get_object_or_404(CodebookVersion.objects.select_related("codebook"), pk=pk)
    codebook = version.codebook
    trees = facet_trees(version)
    editing = codebook.can_edit(request.user) and not version.is_published
    if editing and rule_form is None:
        rule_form = RuleForm(facets=[tree["facet"] for tree in trees])
    context = {
        "version": version,
        "codebook": codebook,
        "versions": codebook.versions.all(),
        "trees": trees,
        "rules": rule_rows(version, trees),
        "rule_form": rule_form,
        "can_edit": codebook.can_edit(request.user),
        "editing": editing,
        "draft": codebook.draft(),
    }
    status = 400 if rule_form is not None and rule_form.errors else 200
    return render(request, "taxonomy_app/version_detail.html", context, status=status)


@dataclass
class RuleRow:
    pk: int
    facet: Facet
    text: str


def rule_rows(version: CodebookVersion, trees: list[FacetTree]) -> list[RuleRow]:
    """The version's rules in words, each with its row's id (for removing it); one query."""
    facets = [tree["facet"] for tree in trees]
    categories = [row.category for tree in trees for row in tree["rows"]]
    infos = facet_infos(facets, categories)
    rows = LabelRule.objects.filter(version=version).select_related("facet", "when_facet")
    return [
        RuleRow(row.pk, row.facet, describe(rule_of(row), infos))
        for row in rows.order_by("order", "pk")
    ]


@require_POST
def draft_start(request: HttpRequest, pk: int) -> HttpResponse:
    codebook = get_object_or_404(Codebook, pk=pk)
    require_owner(request, codebook)
    draft = services.start_draft(codebook=codebook, user=request.user)
    messages.success(request, f"Editing draft v{draft.number}. Publish it when it is ready.")
    return redirect(draft)


@require_http_methods(["GET", "POST"])
def version_publish(request: HttpRequest, pk: int) -> HttpResponse:
    """A confirmation page showing what will change; publishing happens on its POST."""
    version = get_object_or_404(CodebookVersion.objects.select_related("codebook"), pk=pk)
    require_owner(request, version.codebook)
    if version.is_published:
        messages.info(request, f"v{version.number} is published already.")
        return redirect(version)
    form = PublishForm(posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            services.publish_version(
                version=version, changelog=form.cleaned_data["changelog"], user=request.user
            )
        except CodebookError as error:
            add_service_error(form, error)
        else:
            messages.success(request, f"Published v{version.number}. This is what changed.")
            return redirect("taxonomy:diff", pk=version.pk)
    diff = services.diff_version(version=version, viewer=request.user)
    status = 400 if form.errors else 200
    context = {"version": version, "diff": diff, "form": form}
    return render(request, "taxonomy_app/version_publish.html", context, status=status)


@require_http_methods(["GET", "POST"])
def version_discard(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(CodebookVersion.objects.select_related("codebook"), pk=pk)
    require_owner(request, version.codebook)
    if request.method == "POST":
        try:
            services.discard_draft(version=version)
        except CodebookError as error:
            messages.error(request, str(error))
            return redirect(version)
        messages.success(request, f"Discarded draft v{version.number}.")
        return redirect(version.codebook)
    context = {"version": version, "form": ConfirmForm()}
    return render(request, "taxonomy_app/version_discard.html", context)


def version_diff(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_object_or_404(
        CodebookVersion.objects.select_related("codebook", "based_on"), pk=pk
    )
    diff = services.diff_version(version=version, viewer=request.user)
    context = {
        "version": version,
        "diff": diff,
        "can_edit": version.codebook.can_edit(request.user),
    }
    return render(request, "taxonomy_app/version_diff.html", context)


def version_guideline(request: HttpRequest, pk: int) -> HttpResponse:
    """The printable annotation guideline: every facet, definition, note and example.
    Anchors `#facet-KEY` and `#KEY-CODE` let other pages link to one facet or category."""
    version = get_object_or_404(CodebookVersion.objects.select_related("codebook"), pk=pk)
    trees = facet_trees(version)
    for tree in trees:
        tree["rows"] = [row for row in tree["rows"] if not row.category.archived]
    context = {"version": version, "codebook": version.codebook, "trees": trees}
    return render(request, "taxonomy_app/guideline.html", context)


def version_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    if fmt not in services.EXPORT_FORMATS:
        raise Http404("Export as json, yaml or qdc (REFI-QDA).")
    version = get_object_or_404(CodebookVersion.objects.select_related("codebook"), pk=pk)
    return export_response(version, fmt)
