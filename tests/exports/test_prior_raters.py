"""Imported annotators are pseudonymous raters of one study: named after the study and the
workbook's name whatever accounts exist, never a person's account, linked to one by staff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.accounts.forms import SignupForm
from annotator.accounts.services import create_api_token
from annotator.exports.prior import (
    PriorImportError,
    import_prior_labels,
    is_pseudonymous_rater,
    link_rater,
    rater_username,
)
from annotator.studies.errors import StudyError
from annotator.studies.models import Assignment, Membership, Study
from annotator.studies.services import create_member_account, create_study
from taxonomy_app.models import CodebookVersion
from tests.exports.test_prior_rules import CHOICES, GOOD, URL, mapping, workbook
from tests.factories import UserFactory
from tests.taxonomy_app.factories import published_with_rules

pytestmark = pytest.mark.django_db
IMPORT = "/api/prior-labels/import/"
ROWS = [*GOOD, [URL.format(2), "Relevant", "Crash"]]


@pytest.fixture
def owner(db):  # type: ignore[no-untyped-def]
    return UserFactory(username="owner")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return workbook(tmp_path, {"label1": ROWS, "label2": ROWS})


def into(study: Study, path: Path, owner: Any):  # type: ignore[no-untyped-def]
    return import_prior_labels(
        path=path,
        mapping=mapping("Screening", "Symptom"),
        choices=CHOICES,
        user=owner,
        study=study,
    )


def new_study(owner: Any, name: str = "Prior") -> Study:
    version = CodebookVersion.objects.filter(codebook__slug="ruled-bugs").first()
    version = version or published_with_rules()
    return create_study(name=name, codebook_version=version, owner=owner)


def test_raters_are_named_after_the_study_and_taken_accounts_change_nothing(owner, path):
    study = new_study(owner)
    # People named like the workbook's annotators, and one holding the rater name itself.
    people = [UserFactory(username="rater1"), UserFactory(username="rater2")]
    people.append(UserFactory(username=rater_username(study, "rater1")))

    result = into(study, path, owner)

    expected = [f"s{study.pk}-rater-rater1", f"s{study.pk}-rater-rater2"]
    assert result.placeholders == expected
    raters = [Membership.objects.get(study=study, user__first_name=name).user for name in expected]
    assert all(is_pseudonymous_rater(rater) for rater in raters)
    assert not Assignment.objects.filter(annotator__in=people).exists()
    assert not Membership.objects.filter(study=study, user__in=people).exists()
    assert Assignment.objects.filter(annotator__in=raters).count() == 4


def test_a_later_import_into_the_study_labels_as_the_same_raters(owner, path, tmp_path):
    study = new_study(owner)
    into(study, path, owner)
    accounts = get_user_model().objects.count()
    rows = [GOOD[0], [URL.format(3), "Relevant", "Hang"]]
    again = workbook(tmp_path, {"label1": rows, "label2": rows})

    result = import_prior_labels(
        path=again,
        mapping=mapping("Screening", "Symptom"),
        choices=CHOICES,
        user=owner,
        study=study,
    )

    assert result.placeholders == [] and get_user_model().objects.count() == accounts
    assert study.memberships.filter(role=Membership.Role.ANNOTATOR).count() == 2


def test_each_study_has_its_own_raters(owner, path):
    first, second = new_study(owner, "A"), new_study(owner, "B")

    names = [into(study, path, owner).placeholders for study in (first, second)]

    assert names == [
        [f"s{first.pk}-rater-rater1", f"s{first.pk}-rater-rater2"],
        [f"s{second.pk}-rater-rater1", f"s{second.pk}-rater-rater2"],
    ]


def test_the_api_takes_no_accounts_and_answers_alike_for_any_username(owner, path):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=owner, name='t')[1]}")
    version = published_with_rules()
    UserFactory(username="existing")

    def answer(username: str) -> tuple[int, Any]:
        given = {
            "key_column": "Link",
            "sheet_to_annotator": {"label1": "rater1", "label2": "rater2"},
            "column_to_facet": {"Screening": "screening", "Symptom": "symptom"},
            "values": CHOICES,
            "study_name": "S",
            "codebook_version": version.pk,
            "users": {"label1": username},
        }
        with path.open("rb") as file:
            data = {"file": file, "mapping": json.dumps(given)}
            response = client.post(IMPORT, data, format="multipart")
        return response.status_code, response.json()

    assert answer("existing") == answer("nobody") == answer("owner")
    assert answer("existing")[0] == 400
    assert "pseudonymous raters" in json.dumps(answer("nobody")[1])
    assert not Study.objects.exists() and not Assignment.objects.exists()


def test_the_wizard_asks_for_no_accounts_and_takes_none(client, owner, path, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    client.force_login(owner)
    version = published_with_rules()
    with path.open("rb") as file:
        upload = {"file": file, "study_name": "W", "codebook_version": version.pk}
        response = client.post(reverse("exports:prior_upload"), upload)
    assert response.status_code == 302, response.content.decode()[-2000:]
    map_url = response["Location"]
    page = client.get(map_url)
    form = page.context["form"]
    data = {name: field.initial or "" for name, field in form.fields.items()}
    facets = {"Screening": "screening", "Symptom": "symptom"}
    data |= {f"column_{i}": facets.get(c, "") for i, c in enumerate(form.columns)}
    data |= {"user_0": "owner", "user_1": "owner"}  # what the form once took: now ignored
    assert 'name="user_0"' not in page.content.decode()

    review = client.post(map_url, data)
    assert review.status_code == 302, review.content.decode()[-2000:]
    choices = client.get(review["Location"]).context["facets"]
    posted = {
        f"value_{facet}_{n}": CHOICES[facet][u.value]
        for facet, matching, _ in choices
        for n, u in enumerate(matching.unmatched)
    }
    done = client.post(review["Location"], posted)

    study = Study.objects.get(name="W")
    assert done["Location"] == study.get_absolute_url()
    assert not Assignment.objects.filter(annotator=owner).exists()
    raters = study.memberships.filter(role=Membership.Role.ANNOTATOR)
    assert sorted(raters.values_list("user__username", flat=True)) == [
        f"s{study.pk}-rater-label1",  # the wizard names a sheet's annotator after the sheet
        f"s{study.pk}-rater-label2",
    ]


def test_staff_link_a_rater_to_the_person_it_was(owner, path):
    study = new_study(owner)
    into(study, path, owner)
    rater = f"s{study.pk}-rater-rater1"
    person = UserFactory(username="ann")
    old = Membership.objects.get(study=study, user__first_name=rater).user

    call_command("link_rater", study.pk, rater, "ann")

    assert Assignment.objects.filter(item__study=study, annotator=person).count() == 2
    assert not Assignment.objects.filter(annotator=old).exists()
    assert Membership.objects.get(study=study, user=person).role == Membership.Role.ANNOTATOR
    assert not Membership.objects.filter(study=study, user=old).exists()


def test_linking_is_refused_naming_the_field_and_changes_nothing(owner, path):
    study = new_study(owner)
    into(study, path, owner)
    rater1, rater2 = f"s{study.pk}-rater-rater1", f"s{study.pk}-rater-rater2"
    UserFactory(username="gone", is_active=False)
    before = list(Assignment.objects.order_by("pk").values_list("pk", "annotator_id"))

    with pytest.raises(PriorImportError, match=r"field 'rater'.*'someone'"):
        link_rater(study=study, rater="someone", username="owner")
    for username in ("nobody", "gone", rater2):
        with pytest.raises(PriorImportError, match=f"field 'user': no active account '{username}'"):
            link_rater(study=study, rater=rater1, username=username)
    link_rater(study=study, rater=rater1, username="owner")
    with pytest.raises(PriorImportError, match="both labelled items hpcaitech/ColossalAI#1"):
        link_rater(study=study, rater=rater2, username="owner")
    with pytest.raises(CommandError, match="field 'study'"):
        call_command("link_rater", 0, rater2, "owner")

    after = dict(Assignment.objects.values_list("pk", "annotator_id"))
    moved = [pk for pk, annotator in before if after[pk] != annotator]
    assert len(moved) == 2  # rater1's two, given to the owner; nothing else
    assert Membership.objects.filter(study=study, user__first_name=rater2).exists()


@pytest.mark.parametrize("username", ["s12-rater-ann", "S3-Rater-x"])
def test_nobody_signs_up_with_a_rater_name(username):
    form = SignupForm(
        data={"username": username, "password1": "a-long-pass-1", "password2": "a-long-pass-1"}
    )

    assert not form.is_valid() and "kept for imported raters" in str(form.errors["username"])


def test_an_owner_cannot_make_an_account_with_a_rater_name(owner):
    study = new_study(owner)
    with pytest.raises(StudyError, match="kept for imported raters"):
        create_member_account(study=study, username=f"s{study.pk + 1}-rater-bob")
    assert not get_user_model().objects.filter(username__istartswith="s").exists()
