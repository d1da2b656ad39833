"""Input and output shapes of the codebook API (small, one per use)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .models import Category, Codebook, CodebookVersion, Facet, LabelRule, Proposal
from .uploads import check_text, check_upload

# Fields named `required`, `parent` or `fields` carry `# type: ignore[assignment]`: the stubs take
# them for overrides of Field's and Serializer's attributes (djangorestframework-stubs #78, #158),
# though the serializer's metaclass moves declared fields off the class.


class CategoryOutput(serializers.ModelSerializer):
    class Meta:
        model = Category
        fields = [
            "id",
            "facet",
            "parent",
            "origin",
            "code",
            "name",
            "definition",
            "include",
            "exclude",
            "examples",
            "order",
            "archived",
        ]


class FacetOutput(serializers.ModelSerializer):
    class Meta:
        model = Facet
        fields = ["id", "version", "key", "name", "kind", "required", "order", "help"]


class FacetTreeOutput(FacetOutput):
    categories = CategoryOutput(many=True, read_only=True)

    class Meta(FacetOutput.Meta):
        fields = [*FacetOutput.Meta.fields, "categories"]


class VersionSummaryOutput(serializers.ModelSerializer):
    # Plain text rather than an enum: three models have a "status" and their enums would collide.
    status = serializers.CharField(read_only=True, help_text="draft or published")

    class Meta:
        model = CodebookVersion
        fields = [
            "id",
            "codebook",
            "number",
            "status",
            "based_on",
            "changelog",
            "created_at",
            "published_at",
        ]


class VersionOutput(VersionSummaryOutput):
    facets = FacetTreeOutput(many=True, read_only=True)

    class Meta(VersionSummaryOutput.Meta):
        fields = [*VersionSummaryOutput.Meta.fields, "facets"]


class CodebookOutput(serializers.ModelSerializer):
    versions = VersionSummaryOutput(many=True, read_only=True)

    class Meta:
        model = Codebook
        fields = ["id", "name", "slug", "description", "created_at", "versions"]


class ImportInput(serializers.Serializer):
    file = serializers.FileField(
        required=False, help_text="a JSON, YAML or REFI-QDA (.qdc) codebook file"
    )
    content = serializers.CharField(
        required=False, trim_whitespace=False, help_text="the file's text, instead of `file`"
    )
    format = serializers.ChoiceField(choices=["auto", "json", "yaml", "qdc"], default="auto")
    codebook = serializers.PrimaryKeyRelatedField(
        queryset=Codebook.objects.all(),
        required=False,
        allow_null=True,
        help_text="import as the next version of this codebook (default: a new codebook)",
    )
    publish = serializers.BooleanField(default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if bool(attrs.get("file")) == bool(attrs.get("content")):
            raise serializers.ValidationError("send either `file` or `content`")
        try:  # size, name and content: taxonomy_app/uploads.py
            if attrs.get("file"):
                check_upload(attrs["file"])
            else:
                check_text(attrs["content"], attrs.get("format", "auto"))
        except ValueError as error:
            field = "file" if attrs.get("file") else "content"
            raise serializers.ValidationError({field: str(error)}) from None
        return attrs


class PublishInput(serializers.Serializer):
    changelog = serializers.CharField(required=False, allow_blank=True, default="")


class FacetInput(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    kind = serializers.ChoiceField(choices=Facet.Kind.choices)
    required = serializers.BooleanField()  # type: ignore[assignment]
    help = serializers.CharField(required=False, allow_blank=True, default="")


class CategoryCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    code = serializers.CharField(max_length=80, required=False, allow_blank=True, default="")
    parent = serializers.IntegerField(required=False, allow_null=True, default=None)  # type: ignore[assignment]
    definition = serializers.CharField(required=False, allow_blank=True, default="")
    include = serializers.CharField(required=False, allow_blank=True, default="")
    exclude = serializers.CharField(required=False, allow_blank=True, default="")
    examples = serializers.CharField(required=False, allow_blank=True, default="")


class CategoryUpdateInput(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    code = serializers.CharField(max_length=80, required=False)
    definition = serializers.CharField(required=False, allow_blank=True)
    include = serializers.CharField(required=False, allow_blank=True)
    exclude = serializers.CharField(required=False, allow_blank=True)
    examples = serializers.CharField(required=False, allow_blank=True)


class MoveInput(serializers.Serializer):
    parent = serializers.IntegerField(  # type: ignore[assignment]
        required=False, allow_null=True, help_text="new parent id (null: a root category)"
    )
    direction = serializers.ChoiceField(
        choices=["up", "down"], required=False, help_text="swap with a sibling instead"
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("parent" in attrs) == ("direction" in attrs):
            raise serializers.ValidationError("send either `parent` or `direction`")
        return attrs


class MergeInput(serializers.Serializer):
    into = serializers.IntegerField(help_text="the category that remains")


class SplitInput(serializers.Serializer):
    names = serializers.ListField(child=serializers.CharField(max_length=200), default=list)
    into = serializers.ListField(child=serializers.IntegerField(), default=list)


class SplitOutput(serializers.Serializer):
    categories = CategoryOutput(many=True)
    affected_labels = serializers.ListField(child=serializers.JSONField())


class FieldChangeOutput(serializers.Serializer):
    field = serializers.CharField()
    before = serializers.JSONField()
    after = serializers.JSONField()


class ChangeOutput(serializers.Serializer):
    facet = serializers.CharField(source="category.facet.key")
    category = serializers.IntegerField(source="category.pk")
    code = serializers.CharField(source="category.code")
    name = serializers.CharField(source="category.name")
    before = serializers.IntegerField(source="before.pk", allow_null=True)
    fields = FieldChangeOutput(many=True)  # type: ignore[assignment]
    targets = serializers.ListField(child=serializers.CharField(), source="target_codes")
    labels = serializers.IntegerField()


class FacetChangeOutput(serializers.Serializer):
    facet = serializers.CharField(source="facet.key")
    fields = FieldChangeOutput(many=True)  # type: ignore[assignment]


class RuleChangeOutput(serializers.Serializer):
    facet = serializers.CharField()
    text = serializers.CharField(help_text="the rule in words")


class DiffOutput(serializers.Serializer):
    version = serializers.IntegerField(source="version.pk")
    base = serializers.IntegerField(source="base.pk", allow_null=True)
    facets_added = FacetChangeOutput(many=True)
    facets_changed = FacetChangeOutput(many=True)
    added = ChangeOutput(many=True)
    changed = ChangeOutput(many=True)
    merged = ChangeOutput(many=True)
    split = ChangeOutput(many=True)
    archived = ChangeOutput(many=True)
    removed = ChangeOutput(many=True)
    rules_added = RuleChangeOutput(many=True)
    rules_removed = RuleChangeOutput(many=True)
    summary = serializers.CharField()


class ProposalOutput(serializers.ModelSerializer):
    facet_key = serializers.CharField(source="facet.key", read_only=True)
    status = serializers.CharField(read_only=True, help_text="open, accepted, mapped or rejected")

    class Meta:
        model = Proposal
        fields = [
            "id",
            "facet",
            "facet_key",
            "parent",
            "name",
            "rationale",
            "issue",
            "status",
            "resolved_to",
            "reason",
            "proposed_by",
            "resolved_by",
            "created_at",
            "resolved_at",
        ]


class ProposalInput(serializers.Serializer):
    facet = serializers.PrimaryKeyRelatedField(queryset=Facet.objects.all())
    name = serializers.CharField(max_length=200)
    rationale = serializers.CharField(required=False, allow_blank=True, default="")
    issue = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
    parent = serializers.PrimaryKeyRelatedField(  # type: ignore[assignment]
        queryset=Category.objects.all(), required=False, allow_null=True, default=None
    )


class AcceptInput(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    definition = serializers.CharField(required=False, allow_blank=True, default="")


class MapInput(serializers.Serializer):
    category = serializers.PrimaryKeyRelatedField(queryset=Category.objects.all())
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class RejectInput(serializers.Serializer):
    reason = serializers.CharField()


RULE_KINDS = "requires, forbids, leaf_only, exclusive or max_choices"


class RuleOutput(serializers.ModelSerializer):
    kind = serializers.CharField(read_only=True, help_text=RULE_KINDS)
    facet = serializers.CharField(source="facet.key", read_only=True, help_text="a facet key")
    when_facet = serializers.CharField(
        source="when_facet.key", read_only=True, allow_null=True, help_text="a facet key"
    )
    when_categories = serializers.ListField(child=serializers.CharField(), read_only=True)
    categories = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = LabelRule
        fields = [
            "id",
            "version",
            "kind",
            "facet",
            "when_facet",
            "when_categories",
            "categories",
            "max_choices",
        ]


class RuleInput(serializers.Serializer):
    """A label rule: facets by key, categories by code (see taxonomy_app/README.md)."""

    # Plain text rather than an enum (facets have a "kind" too); the service names a bad one.
    kind = serializers.CharField(max_length=20, help_text=RULE_KINDS)
    facet = serializers.CharField(max_length=50)
    when_facet = serializers.CharField(
        max_length=50, required=False, allow_null=True, allow_blank=True, default=None
    )
    when_categories = serializers.ListField(
        child=serializers.CharField(max_length=80), required=False, default=list
    )
    categories = serializers.ListField(
        child=serializers.CharField(max_length=80), required=False, default=list
    )
    max_choices = serializers.IntegerField(required=False, allow_null=True, default=None)
