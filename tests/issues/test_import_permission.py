"""Imports and GitHub syncs write into the issue pool every study shares: only staff and
holders of issues.import_issues (the Importers group) reach their pages and API routes or see
their links; everyone else gets 403 and no link."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.issues.access import can_import
from annotator.issues.models import ImportJob, SyncJob
from annotator.studies.demo import seed_demo_study
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PAGES = ["issues:import", "issues:sync"]


def page_client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def annotator() -> Any:
    return UserFactory(username="annotator")


def staff() -> Any:
    return UserFactory(username="staff", is_staff=True)  # staff, not a superuser


def holder() -> Any:
    user = UserFactory(username="holder")
    user.groups.add(Group.objects.get(name="Importers"))  # made by issues' migration 0006
    return user


def top_bar_and_list(client: Client) -> str:
    return client.get(reverse("issues:list")).content.decode()


def test_an_annotator_gets_403_on_the_pages_and_sees_no_links() -> None:
    client = page_client(annotator())
    for name in PAGES:
        assert client.get(reverse(name)).status_code == 403, name
    assert client.post(reverse("issues:sync"), {"repository": "a/b"}).status_code == 403
    html = top_bar_and_list(client)
    assert f'href="{reverse("issues:import")}"' not in html
    assert f'href="{reverse("issues:sync")}"' not in html
    assert not SyncJob.objects.exists()


def test_an_annotator_gets_403_on_the_api_and_nothing_is_queued() -> None:
    client = api_client(annotator())
    imported = client.post("/api/imports/", {}, format="multipart")
    synced = client.post("/api/syncs/", {"repository": "deepspeedai/DeepSpeed"}, format="json")
    assert (imported.status_code, synced.status_code) == (403, 403)
    assert "import permission" in synced.json()["detail"]
    assert not ImportJob.objects.exists() and not SyncJob.objects.exists()


def test_signed_out_the_api_asks_for_credentials() -> None:
    assert APIClient().post("/api/syncs/", {}, format="json").status_code == 401


@pytest.mark.parametrize("who", [staff, holder], ids=["staff", "importer"])
def test_staff_and_importers_reach_the_pages_api_and_links(who: Any) -> None:
    user = who()
    assert can_import(user)
    client = page_client(user)
    for name in PAGES:
        assert client.get(reverse(name)).status_code == 200, name
    html = top_bar_and_list(client)
    assert f'href="{reverse("issues:import")}"' in html
    assert f'href="{reverse("issues:sync")}"' in html
    api = api_client(user)
    # Past the permission: the input is checked (400), where others were refused (403).
    assert api.post("/api/imports/", {}, format="multipart").status_code == 400
    assert api.post("/api/syncs/", {"repository": "not a repo"}, format="json").status_code == 400


def test_a_superuser_holds_it_and_an_inactive_importer_does_not() -> None:
    assert can_import(UserFactory(username="root", is_superuser=True))
    user = holder()
    user.is_active = False
    user.save()
    assert not can_import(user)


def test_the_demo_owner_may_import(db: Any) -> None:
    call_command("load_codebook", "--publish", stdout=io.StringIO())
    owner = UserFactory(username="demo")
    assert not can_import(owner)
    seed_demo_study(owner=owner)
    owner = type(owner).objects.get(pk=owner.pk)  # permissions are cached on the instance
    assert can_import(owner)
    assert page_client(owner).get(reverse("issues:import")).status_code == 200
