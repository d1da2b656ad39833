"""Forms of the codebook pages; every write they lead to goes through taxonomy_app.services."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.db.models import QuerySet

from .models import Category, Codebook, Facet, LabelRule
from .uploads import check_upload

TEXTAREA = {"rows": 3}
FIELD_IN_MESSAGE = re.compile(r"^(?:\w+: )?field '(\w+)': (.*)$")


def add_service_error(form: forms.Form, error: Exception) -> None:
    """Show a service's refusal next to the field it names ("field 'code': …"), else on top."""
    message = str(error)
    match = FIELD_IN_MESSAGE.match(message)
    if match and match.group(1) in form.fields:
        form.add_error(match.group(1), match.group(2))
    else:
        form.add_error(None, message)


class ImportForm(forms.Form):
    file = forms.FileField(
        help_text="A codebook exported from annotator (JSON, YAML or .qdc), or a REFI-QDA "
        "codebook (.qdc) from ATLAS.ti, MAXQDA, NVivo or QualCoder."
    )
    format = forms.ChoiceField(
        choices=[("auto", "detect"), ("json", "JSON"), ("yaml", "YAML"), ("qdc", "REFI-QDA")],
        initial="auto",
    )
    codebook = forms.ModelChoiceField(
        queryset=Codebook.objects.all(),
        required=False,
        empty_label="a new codebook",
        label="Import as",
        help_text="or as the next version of an existing codebook (it shows as a draft).",
    )
    publish = forms.BooleanField(required=False, help_text="Publish the imported version.")

    def clean_file(self) -> Any:
        uploaded = self.cleaned_data["file"]
        try:
            check_upload(uploaded)  # size, name and content: taxonomy_app/uploads.py
        except ValueError as error:
            raise forms.ValidationError(f"{error}. Nothing was imported.") from None
        return uploaded


class CategoryForm(forms.Form):
    name = forms.CharField(max_length=200)
    code = forms.SlugField(max_length=80, help_text="unique in the facet; used in exports")
    definition = forms.CharField(widget=forms.Textarea(attrs=TEXTAREA), required=False)
    include = forms.CharField(
        widget=forms.Textarea(attrs=TEXTAREA), required=False, label="Include notes"
    )
    exclude = forms.CharField(
        widget=forms.Textarea(attrs=TEXTAREA), required=False, label="Exclude notes"
    )
    examples = forms.CharField(widget=forms.Textarea(attrs=TEXTAREA), required=False)


def facet_choices(facet: Facet, exclude: set[int] | None = None) -> QuerySet[Category]:
    return Category.objects.filter(facet=facet, archived=False).exclude(pk__in=exclude or set())


def limit_choices(
    form: forms.Form, name: str, queryset: QuerySet[Category], empty_label: str | None = None
) -> None:
    """Offer only `queryset` in a model choice field (the stubs type fields as plain Field)."""
    field: Any = form.fields[name]
    field.queryset = queryset
    if empty_label:
        field.empty_label = empty_label


class AddCategoryForm(forms.Form):
    name = forms.CharField(max_length=200)
    code = forms.SlugField(
        max_length=80, required=False, help_text="leave empty to make one from the name"
    )
    parent = forms.ModelChoiceField(queryset=Category.objects.none(), required=False)

    def __init__(self, *args: Any, facet: Facet, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit_choices(self, "parent", facet_choices(facet), "— top level —")


class MoveForm(forms.Form):
    parent = forms.ModelChoiceField(
        queryset=Category.objects.none(), required=False, label="New parent"
    )

    def __init__(self, *args: Any, category: Category, exclude: set[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit_choices(self, "parent", facet_choices(category.facet, exclude), "— top level —")


class MergeForm(forms.Form):
    into = forms.ModelChoiceField(queryset=Category.objects.none(), label="Merge into")

    def __init__(self, *args: Any, category: Category, exclude: set[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit_choices(self, "into", facet_choices(category.facet, exclude))


class SplitForm(forms.Form):
    names = forms.CharField(
        widget=forms.Textarea(attrs=TEXTAREA),
        required=False,
        label="New categories",
        help_text="one name per line; each becomes a sibling to define afterwards",
    )
    into = forms.ModelMultipleChoiceField(
        queryset=Category.objects.none(), required=False, label="Existing categories"
    )

    def __init__(self, *args: Any, category: Category, exclude: set[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit_choices(self, "into", facet_choices(category.facet, exclude))

    def name_list(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["names"].splitlines() if line.strip()]


class ConfirmForm(forms.Form):
    """Archive, restore, delete and discard: the confirmation page is the form."""


class PublishForm(forms.Form):
    changelog = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        required=False,
        help_text="What changed and why. Left empty, it is written from the diff.",
    )


class ProposalForm(forms.Form):
    facet = forms.ModelChoiceField(queryset=Facet.objects.none())
    name = forms.CharField(max_length=200)
    rationale = forms.CharField(widget=forms.Textarea(attrs=TEXTAREA), required=False)
    issue = forms.CharField(max_length=300, required=False, help_text="URL or OWNER/NAME#N")

    def __init__(self, *args: Any, facets: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field: Any = self.fields["facet"]
        field.queryset = facets


class ResolveForm(forms.Form):
    action = forms.ChoiceField(choices=[("accept", "accept"), ("map", "map"), ("reject", "reject")])
    category = forms.ModelChoiceField(queryset=Category.objects.none(), required=False)
    reason = forms.CharField(required=False, max_length=2000)

    def __init__(self, *args: Any, facet: Facet, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit_choices(self, "category", facet_choices(facet))


class RuleForm(forms.Form):
    """A label rule for a draft; categories are typed as codes, as the codebook file has them."""

    kind = forms.ChoiceField(choices=[])
    facet = forms.ChoiceField(choices=[])
    when_facet = forms.ChoiceField(choices=[], required=False, label="When facet")
    when_categories = forms.CharField(
        required=False, label="is one of", help_text="category codes, separated by commas"
    )
    categories = forms.CharField(
        required=False,
        help_text="exclusive: the codes that exclude each other; leaf_only: groups that stay "
        "selectable",
    )
    max_choices = forms.IntegerField(required=False, label="At most")

    def __init__(self, *args: Any, facets: list[Facet], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        keys = [(f.key, f"{f.name} ({f.key})") for f in facets]
        choices = {"kind": LabelRule.Kind.choices, "facet": keys, "when_facet": [("", "—"), *keys]}
        for name, options in choices.items():
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = options

    def codes(self, name: str) -> list[str]:
        return [code for code in re.split(r"[\s,]+", self.cleaned_data[name]) if code]
