"""Editing a draft's categories: in place with htmx (edit, add, reorder), and through a
confirmation page for structural changes (move, merge, split, archive, restore, delete)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from . import services
from .errors import CodebookError
from .forms import (
    AddCategoryForm,
    CategoryForm,
    ConfirmForm,
    MergeForm,
    MoveForm,
    SplitForm,
    add_service_error,
)
from .models import Category, Facet
from .services.categories import descendant_ids
from .usage import label_usage
from .views import facet_tree, posted, require_owner, tree_rows

PAGE = "taxonomy_app/version_detail.html"


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails  # set by django_htmx's middleware


def _category(request: HttpRequest, pk: int, *, edit: bool = True) -> Category:
    category = get_object_or_404(
        Category.objects.select_related("facet__version__codebook", "parent"), pk=pk
    )
    if edit:
        require_owner(request, category.facet.version.codebook)
    return category


def _row_context(request: HttpRequest, category: Category) -> dict[str, Any]:
    rows = tree_rows(list(Category.objects.filter(facet=category.facet_id)))
    row = next(r for r in rows if r.category.pk == category.pk)
    version = category.facet.version
    editing = version.codebook.can_edit(request.user) and not version.is_published
    return {"row": row, "version": version, "editing": editing}


def _back(category: Category) -> HttpResponse:
    return redirect(f"{category.facet.version.get_absolute_url()}#category-{category.pk}")


def category_row(request: HttpRequest, pk: int) -> HttpResponse:
    """One row of the tree (what "Cancel" on an edit form swaps back in)."""
    category = _category(request, pk, edit=False)
    return render(
        request, f"{PAGE}#category-row", {**_row_context(request, category), "focus": True}
    )


@require_http_methods(["GET", "POST"])
def category_edit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Edit name, code, definition, notes and examples; with htmx the form replaces the row
    and, once saved, the row replaces the form."""
    category = _category(request, pk)
    initial = {f: getattr(category, f) for f in CategoryForm.base_fields}
    form = CategoryForm(posted(request), initial=initial, auto_id=f"category-{pk}-%s")
    form.fields["name"].widget.attrs["data-autofocus"] = True
    if request.method == "POST" and form.is_valid():
        changed = {f: form.cleaned_data[f] for f in form.changed_data}
        try:
            services.update_category(category=category, user=request.user, **changed)
        except CodebookError as error:
            add_service_error(form, error)
        else:
            if request.htmx:
                context = {**_row_context(request, category), "focus": True}
                return render(request, f"{PAGE}#category-row", context)
            messages.success(request, f"Saved {category.name}.")
            return _back(category)
    template = "taxonomy_app/category_edit.html"
    if request.htmx:
        # htmx swaps 200 responses only: the form comes back with its errors inline.
        return render(request, f"{template}#category-form", {"category": category, "form": form})
    status = 400 if form.errors else 200
    return render(request, template, {"category": category, "form": form}, status=status)


@require_POST
def category_add(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    facet = get_object_or_404(Facet.objects.select_related("version__codebook"), pk=pk)
    require_owner(request, facet.version.codebook)
    form = AddCategoryForm(request.POST, facet=facet)
    category = None
    if form.is_valid():
        try:
            category = services.add_category(facet=facet, user=request.user, **form.cleaned_data)
        except CodebookError as error:
            add_service_error(form, error)
    if not request.htmx:
        if category is None:
            messages.error(request, " ".join(str(e) for errs in form.errors.values() for e in errs))
            return redirect(f"{facet.version.get_absolute_url()}#facet-{facet.key}")
        return _back(category)
    context = {"tree": facet_tree(facet), "version": facet.version, "editing": True}
    context["add_form"] = form if category is None else None
    return render(request, f"{PAGE}#facet-tree", context)


@require_POST
def category_reorder(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    category = _category(request, pk)
    try:
        services.reorder_category(category=category, direction=request.POST.get("direction", ""))
    except CodebookError as error:
        messages.error(request, str(error))
    if request.htmx:
        context = {"tree": facet_tree(category.facet), "version": category.facet.version}
        return render(request, f"{PAGE}#facet-tree", {**context, "editing": True})
    return _back(category)


@dataclass
class Action:
    title: str
    explain: str
    form: type[forms.Form]
    run: Callable[[Category, forms.Form, Any], str]


def _move(category: Category, form: forms.Form, user: Any) -> str:
    parent = form.cleaned_data["parent"]
    services.move_category(category=category, parent=parent, user=user)
    return f"Moved {category.name} under {parent.name if parent else 'the top level'}."


def _merge(category: Category, form: forms.Form, user: Any) -> str:
    target = form.cleaned_data["into"]
    services.merge_categories(source=category, target=target, user=user)
    return f"Merged {category.name} into {target.name}."


def _split(category: Category, form: forms.Form, user: Any) -> str:
    assert isinstance(form, SplitForm)
    result = services.split_category(
        source=category, names=form.name_list(), into=form.cleaned_data["into"], user=user
    )
    names = ", ".join(c.name for c in result.categories)
    waiting = len(result.affected_labels)
    return f"Split {category.name} into {names}; {waiting} labels will need a decision."


def _archive(category: Category, form: forms.Form, user: Any) -> str:
    services.archive_category(category=category, user=user)
    return f"Archived {category.name}."


def _restore(category: Category, form: forms.Form, user: Any) -> str:
    services.restore_category(category=category)
    return f"Restored {category.name}."


def _delete(category: Category, form: forms.Form, user: Any) -> str:
    services.delete_category(category=category)
    return f"Deleted {category.name}."


ACTIONS = {
    "move": Action(
        "Move", "Choose its new parent. It is placed last among its new siblings.", MoveForm, _move
    ),
    "merge": Action(
        "Merge",
        "The category is archived; labels that use it will be carried over to the category "
        "you choose.",
        MergeForm,
        _merge,
    ),
    "split": Action(
        "Split",
        "The category is archived and replaced by the categories you name. Labels that use it "
        "need a person to choose among them.",
        SplitForm,
        _split,
    ),
    "archive": Action(
        "Archive",
        "Annotators will no longer see it. Labels that use it keep it: categories are never "
        "deleted once published.",
        ConfirmForm,
        _archive,
    ),
    "restore": Action("Restore", "Annotators will see it again.", ConfirmForm, _restore),
    "delete": Action(
        "Delete", "Only categories added in this draft can be deleted.", ConfirmForm, _delete
    ),
}


@require_http_methods(["GET", "POST"])
def category_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    """The confirmation page of a structural change, and the change on its POST."""
    if action not in ACTIONS:
        raise Http404("No such action.")
    spec, category = ACTIONS[action], _category(request, pk)
    exclude = {category.pk, *descendant_ids(category)}
    kwargs: dict[str, Any] = {}
    if spec.form is not ConfirmForm:
        kwargs = {"category": category, "exclude": exclude}
    form = spec.form(posted(request), **kwargs)
    if request.method == "POST" and form.is_valid():
        try:
            message = spec.run(category, form, request.user)
        except CodebookError as error:
            add_service_error(form, error)
        else:
            messages.success(request, message)
            return _back(category)
    origin = category.origin_id
    counts = label_usage().count_labels([origin], viewer=request.user) if origin else {}
    labels = counts.get(origin, 0) if origin else 0
    context = {"category": category, "action": action, "spec": spec, "form": form}
    context["labels"] = labels
    status = 400 if form.errors else 200
    return render(request, "taxonomy_app/category_action.html", context, status=status)
