"""The admin shows published versions read-only: no change, no delete."""

from __future__ import annotations

import pytest
from django.urls import reverse

from taxonomy_app import services
from taxonomy_app.models import Category
from tests.factories import UserFactory
from tests.taxonomy_app.factories import category

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):  # type: ignore[no-untyped-def]
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def test_published_category_cannot_be_changed_in_the_admin(admin_client, v1):
    hang = category(v1, "symptom", "hang")
    url = reverse("admin:taxonomy_app_category_change", args=[hang.pk])

    page = admin_client.get(url)
    response = admin_client.post(url, {"code": "hang", "name": "Changed", "facet": hang.facet_id})

    assert page.status_code == 200 and b'name="name"' not in page.content  # shown, not editable
    assert response.status_code == 403
    assert Category.objects.get(pk=hang.pk).name == "Hang"


@pytest.mark.parametrize(
    ("model", "pk"),
    [
        ("category", lambda v: category(v, "symptom", "hang").pk),
        ("codebookversion", lambda v: v.pk),
        ("facet", lambda v: v.facets.first().pk),
    ],
)
def test_published_objects_cannot_be_deleted_in_the_admin(admin_client, v1, model, pk):
    url = reverse(f"admin:taxonomy_app_{model}_delete", args=[pk(v1)])

    assert admin_client.post(url, {"post": "yes"}).status_code == 403
    assert Category.objects.filter(facet__version=v1).count() == 10


def test_draft_category_is_editable_in_the_admin(admin_client, v1):
    draft = services.start_draft(codebook=v1.codebook)
    hang = category(draft, "symptom", "hang")

    page = admin_client.get(reverse("admin:taxonomy_app_category_change", args=[hang.pk]))

    assert b'name="name"' in page.content
