"""Codebook pages: the tree, htmx editing (partials and inline errors), confirmations, the
diff, publishing, the guideline, import errors, proposals, and who may change what."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from taxonomy_app import services
from taxonomy_app.models import Category, CodebookVersion, Proposal
from tests.taxonomy_app.factories import category, small_document
from tests.taxonomy_app.test_import_export import snapshot

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


@pytest.fixture
def draft(v1):  # type: ignore[no-untyped-def]
    return services.start_draft(codebook=v1.codebook)


def test_pages_require_login(client, v1):
    response = client.get(reverse("taxonomy:version", args=[v1.pk]))

    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_list_links_every_version(owner_client, v1):
    response = owner_client.get(reverse("taxonomy:list"))

    assert b"Small bugs" in response.content
    assert reverse("taxonomy:version", args=[v1.pk]).encode() in response.content
    assert b"Codebooks</a>" in response.content  # the navigation link


def test_published_version_page_offers_a_draft_to_the_owner_only(owner_client, user, v1):
    other = Client()  # not the `client` fixture: owner_client is that one
    other.force_login(user)
    mine = owner_client.get(reverse("taxonomy:version", args=[v1.pk])).content.decode()
    theirs = other.get(reverse("taxonomy:version", args=[v1.pk])).content.decode()

    assert "Start a draft" in mine and "Start a draft" not in theirs
    assert "Edit</a>" not in mine  # published: read-only even for the owner
    assert "Waits." in theirs  # definitions are shown


def test_version_page_query_count_does_not_grow_with_categories(
    owner_client, django_assert_max_num_queries
):
    call_command("load_codebook", "--publish", stdout=io.StringIO())
    version = CodebookVersion.objects.get(codebook__slug="distributed-dl-bugs")

    with django_assert_max_num_queries(12):
        response = owner_client.get(reverse("taxonomy:version", args=[version.pk]))

    assert response.status_code == 200
    assert response.content.count(b'class="category') >= 60


def test_start_draft_redirects_to_the_editable_draft(owner_client, v1):
    response = owner_client.post(reverse("taxonomy:draft", args=[v1.codebook_id]), follow=True)

    draft = v1.codebook.draft()
    assert response.redirect_chain[-1][0] == draft.get_absolute_url()
    assert b"Review and publish" in response.content and b"Edit</a>" in response.content


def test_someone_else_cannot_start_a_draft_or_edit(logged_in_client, v1, draft):
    hang = category(draft, "symptom", "hang")

    assert (
        logged_in_client.post(reverse("taxonomy:draft", args=[v1.codebook_id])).status_code == 403
    )
    edit = logged_in_client.post(reverse("taxonomy:category_edit", args=[hang.pk]), {"name": "X"})
    assert edit.status_code == 403


def test_htmx_edit_returns_the_form_partial(owner_client, draft):
    hang = category(draft, "symptom", "hang")

    response = owner_client.get(reverse("taxonomy:category_edit", args=[hang.pk]), headers=HTMX)

    content = response.content.decode().lstrip()
    assert content.startswith(f'<form id="category-{hang.pk}"')
    assert "<html" not in content and "autofocus" in content


def form_data(item: Category, **changes: str) -> dict[str, str]:
    fields = ["name", "code", "definition", "include", "exclude", "examples"]
    return {**{f: getattr(item, f) for f in fields}, **changes}


def test_htmx_save_returns_the_updated_row(owner_client, draft):
    hang = category(draft, "symptom", "hang")

    response = owner_client.post(
        reverse("taxonomy:category_edit", args=[hang.pk]),
        form_data(hang, definition="Makes no progress for 10 minutes."),
        headers=HTMX,
    )

    content = response.content.decode().lstrip()
    assert content.startswith(f'<li id="category-{hang.pk}"')
    assert "Makes no progress for 10 minutes." in content
    assert Category.objects.get(pk=hang.pk).definition == "Makes no progress for 10 minutes."


def test_htmx_save_with_a_taken_code_shows_the_error_inline_and_changes_nothing(
    owner_client, draft
):
    hang = category(draft, "symptom", "hang")

    response = owner_client.post(
        reverse("taxonomy:category_edit", args=[hang.pk]),
        form_data(hang, code="oom", name="New"),
        headers=HTMX,
    )

    assert response.status_code == 200  # htmx swaps only 2xx responses
    content = response.content.decode()
    assert content.lstrip().startswith("<form") and "&#x27;oom&#x27; is already used" in content
    assert Category.objects.get(pk=hang.pk).name == "Hang"


def test_plain_post_with_an_error_answers_400_with_the_full_page(owner_client, draft):
    hang = category(draft, "symptom", "hang")

    response = owner_client.post(
        reverse("taxonomy:category_edit", args=[hang.pk]), form_data(hang, name="")
    )

    assert response.status_code == 400 and b"<html" in response.content


def test_add_with_htmx_returns_the_facet_tree(owner_client, draft):
    facet = draft.facets.get(key="symptom")
    failure = category(draft, "symptom", "failure")

    response = owner_client.post(
        reverse("taxonomy:category_add", args=[facet.pk]),
        {"name": "Bus error", "parent": failure.pk},
        headers=HTMX,
    )

    assert (
        response.content.decode()
        .lstrip()
        .startswith(f'<section class="facet" id="facet-{facet.pk}"')
    )
    assert category(draft, "symptom", "bus-error").parent == failure


def test_reorder_buttons_move_a_category(owner_client, draft):
    oom = category(draft, "symptom", "oom")

    owner_client.post(
        reverse("taxonomy:category_reorder", args=[oom.pk]), {"direction": "up"}, headers=HTMX
    )

    assert [c.code for c in category(draft, "symptom", "failure").children.order_by("order")] == [
        "oom",
        "hang",
        "crash",
    ]


def test_merge_page_confirms_with_the_label_count_before_merging(owner_client, v1, draft, labels):
    labels["l1"] = category(v1, "symptom", "hang").pk
    hang, crash = category(draft, "symptom", "hang"), category(draft, "symptom", "crash")
    url = reverse("taxonomy:category_action", args=[hang.pk, "merge"])

    page = owner_client.get(url).content.decode()
    assert "1 label</strong>" in page and "Merge Hang</button>" in page
    assert not Category.objects.get(pk=hang.pk).archived  # nothing happens on GET

    owner_client.post(url, {"into": crash.pk})
    assert Category.objects.get(pk=hang.pk).archived


def test_move_page_refuses_a_cycle_with_an_inline_error(owner_client, draft):
    failure, hang = category(draft, "symptom", "failure"), category(draft, "symptom", "hang")

    response = owner_client.post(
        reverse("taxonomy:category_action", args=[failure.pk, "move"]), {"parent": hang.pk}
    )

    # Descendants are not offered; a forged choice is refused by the form.
    assert response.status_code == 400 and b'role="alert"' in response.content
    assert Category.objects.get(pk=failure.pk).parent is None


def test_delete_of_a_published_category_explains_to_archive(owner_client, draft):
    slow = category(draft, "symptom", "slow")

    response = owner_client.post(reverse("taxonomy:category_action", args=[slow.pk, "delete"]))

    assert response.status_code == 400 and b"archive it instead" in response.content
    assert Category.objects.filter(pk=slow.pk).exists()


def test_publish_confirmation_shows_the_diff_then_publishes(owner_client, draft):
    services.update_category(category=category(draft, "symptom", "hang"), definition="Stuck.")
    url = reverse("taxonomy:publish", args=[draft.pk])

    page = owner_client.get(url).content.decode()
    assert "Stuck." in page and "Waits." in page and "Publish v2</button>" in page
    assert not CodebookVersion.objects.get(pk=draft.pk).is_published

    response = owner_client.post(url, {"changelog": "Sharper hang."})
    assert response["Location"] == reverse("taxonomy:diff", args=[draft.pk])
    assert CodebookVersion.objects.get(pk=draft.pk).changelog == "Sharper hang."


def test_guideline_reads_as_a_document_without_archived_categories(owner_client, draft):
    services.archive_category(category=category(draft, "symptom", "slow"))

    content = owner_client.get(reverse("taxonomy:guideline", args=[draft.pk])).content.decode()

    assert 'id="symptom-hang"' in content and 'id="facet-symptom"' in content
    for text in [
        "Waits.",
        "Timeouts.",
        "Slow runs.",
        "NCCL timeout.",
        "Choose every category that applies.",
    ]:
        assert text in content
    assert 'id="symptom-slow"' not in content


def test_export_download(owner_client, v1):
    response = owner_client.get(reverse("taxonomy:export", args=[v1.pk, "json"]))

    assert json.loads(response.content)["codebook"]["slug"] == "small-bugs"
    assert owner_client.get(reverse("taxonomy:export", args=[v1.pk, "xml"])).status_code == 404


def test_import_page_shows_the_error_and_writes_nothing(owner_client, v1):
    document = small_document()
    document["facets"][1]["kind"] = "tree"
    upload = SimpleUploadedFile("bad.json", json.dumps(document).encode())
    before = snapshot()

    response = owner_client.post(reverse("taxonomy:import"), {"file": upload, "format": "auto"})

    assert response.status_code == 400
    assert (
        b"facet &#x27;symptom&#x27;: field &#x27;kind&#x27;: unknown facet kind" in response.content
    )
    assert snapshot() == before


def test_import_page_creates_a_codebook(owner_client, db):
    upload = SimpleUploadedFile("small.json", json.dumps(small_document()).encode())

    response = owner_client.post(
        reverse("taxonomy:import"), {"file": upload, "format": "auto", "publish": "on"}
    )

    version = CodebookVersion.objects.get(codebook__slug="small-bugs")
    assert response["Location"] == version.get_absolute_url() and version.is_published


def test_proposals_page_counts_and_resolves(owner_client, v1):
    facet = v1.facets.get(key="symptom")
    proposal = services.create_proposal(facet=facet, name="Bus error", issue="javascript:alert(1)")
    url = reverse("taxonomy:proposals", args=[v1.codebook_id])

    page = owner_client.get(url).content.decode()
    assert "Bus error" in page and 'href="javascript:' not in page

    resolve = reverse("taxonomy:proposal_resolve", args=[proposal.pk])
    owner_client.post(resolve, {f"p{proposal.pk}-action": "reject", f"p{proposal.pk}-reason": ""})
    assert Proposal.objects.get().status == "open"  # a reason is required
    owner_client.post(resolve, {f"p{proposal.pk}-action": "accept"})
    assert Proposal.objects.get().status == "accepted"


def test_annotators_propose_from_the_proposals_page(logged_in_client, v1):
    facet = v1.facets.get(key="fix")
    url = reverse("taxonomy:proposals", args=[v1.codebook_id])

    response = logged_in_client.post(
        url, {"facet": facet.pk, "name": "Fix launcher", "issue": "a/b#3"}
    )

    assert response.status_code == 302
    assert Proposal.objects.get().facet == facet
