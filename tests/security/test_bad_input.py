"""Bad input answered with a 400 (or a form error) naming the parameter, never a 500: the
middleware's refusals (NUL bytes, numbers int() cannot read), the integer helper, and the
routes where they were found (the annotate page, issue selection, agreement runs, codebook
files). tests/security/test_fuzz_routes.py sends the same values to every route."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotator.agreement.models import AgreementRun
from annotator.params import INT_MAX, BadParameter, int_or, optional_int, parse_int
from annotator.studies.models import Annotation, Selection
from taxonomy_app.models import Codebook
from tests.security import test_uploads
from tests.security.test_uploads import BY_KIND, Route, send, state
from tests.studies.factories import make_world

pytestmark = pytest.mark.django_db
world = test_uploads.world  # an importer, their clients and MEDIA_ROOT (codebook uploads)


# --- the integer helper ------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["²", "9" * 5000, "abc", "", " ", "1.5", "-1", "١٢", "0x10"])
def test_parse_int_refuses_what_is_not_ascii_digits_naming_the_parameter(value: str) -> None:
    with pytest.raises(BadParameter) as caught:
        parse_int(value, name="round")
    assert str(caught.value).startswith("parameter 'round': ")
    assert "is not a whole number" in str(caught.value)


def test_parse_int_refuses_a_number_past_a_postgresql_integer() -> None:
    with pytest.raises(BadParameter) as caught:
        parse_int(str(2**31), name="sample_size")
    assert str(caught.value) == (f"parameter 'sample_size': {2**31} is not between 0 and {INT_MAX}")
    assert parse_int(str(INT_MAX), name="sample_size") == INT_MAX


def test_parse_int_reads_plain_numbers_and_bounds_them() -> None:
    assert parse_int(" 42 ", name="page") == 42
    assert parse_int("0007", name="page") == 7
    assert parse_int("-3", name="offset", minimum=-5) == -3
    with pytest.raises(BadParameter, match="parameter 'page': 0 is not between 1 and"):
        parse_int("0", name="page", minimum=1)
    assert optional_int("", name="round") is None
    assert optional_int(None, name="round") is None


def test_int_or_gives_the_default_for_anything_else() -> None:
    assert [int_or(v, -1) for v in ("12", "²", "9" * 5000, str(2**31), "abc", "-1")] == [
        12,
        -1,
        -1,
        -1,
        -1,
        -1,
    ]


# --- the middleware ----------------------------------------------------------------------------


@pytest.fixture
def owner_client(db: Any) -> tuple[Client, Any]:
    built = make_world(items=2, k=1, annotators=1)
    client = Client(raise_request_exception=False)
    client.force_login(built.owner)
    return client, built


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("a\x00b", "contains a NUL byte (\\x00)"),
        ("9" * 5000, "holds a number of more than 4300 digits"),
        ("²", "'²' is not a number in decimal digits"),
    ],
    ids=["nul", "5000-digits", "superscript-two"],
)
def test_a_query_parameter_int_cannot_read_or_postgresql_cannot_hold_is_a_400_naming_it(
    owner_client: Any, value: str, problem: str
) -> None:
    client, _ = owner_client
    response = client.get(reverse("issues:list"), {"repository": value})
    assert response.status_code == 400
    assert f"query parameter &#x27;repository&#x27; {problem}".replace("'", "&#x27;") in (
        response.content.decode()
    )


def test_the_api_answers_a_bad_form_field_in_json_naming_it(owner_client: Any) -> None:
    client, built = owner_client
    url = reverse("api-agreement-runs", args=[built.study.pk])
    response = client.post(url, {"round": "1\x00"})
    assert response.status_code == 400
    assert response.json() == {"detail": "form field 'round' contains a NUL byte (\\x00)"}
    assert AgreementRun.objects.count() == 0


def test_a_form_that_cannot_be_read_is_a_400_with_the_reason(owner_client: Any) -> None:
    client, built = owner_client
    url = reverse("api-agreement-runs", args=[built.study.pk])
    response = client.post(url, "not a form", content_type="multipart/form-data")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("the form could not be read: ")


def test_a_nul_in_a_url_parameter_is_a_400_naming_it(owner_client: Any) -> None:
    client, _ = owner_client
    response = client.get("/studies/join/abc%00def/")
    assert response.status_code == 400
    assert "URL parameter &#x27;token&#x27; contains a NUL byte" in response.content.decode()


def test_an_htmx_request_gets_the_message_alone(owner_client: Any) -> None:
    client, _ = owner_client
    response = client.get(reverse("issues:list"), {"q": "\x00"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    text = response.content.decode()
    assert 'id="bad-request"' in text and "<html" not in text


def test_a_login_with_a_name_longer_than_any_account_is_refused_not_a_500(db: Any) -> None:
    client = Client(raise_request_exception=False)
    response = client.post(reverse("login"), {"username": "x" * 10_000, "password": "secret"})
    assert response.status_code == 200
    assert "correct username and password" in str(response.context["form"].errors["__all__"])


# --- where the values were found -----------------------------------------------------------------


@pytest.fixture
def annotating(db: Any) -> dict[str, Any]:
    from annotator.studies.services import next_assignment

    built = make_world(items=2, k=1, annotators=1)
    annotator = built.annotators[0]
    assignment = next_assignment(study=built.study, annotator=annotator)
    client = Client(raise_request_exception=False)
    client.force_login(annotator)
    return {"world": built, "assignment": assignment, "client": client}


@pytest.mark.parametrize("route", ["studies:draft", "studies:submit"])
@pytest.mark.parametrize("value", ["²", "9" * 5000], ids=["superscript-two", "5000-digits"])
def test_a_label_the_annotate_page_cannot_read_changes_nothing(
    annotating: dict[str, Any], route: str, value: str
) -> None:
    built, assignment = annotating["world"], annotating["assignment"]
    facet = built.version.facets.order_by("order").first()
    data = {f"facet-{facet.pk}": value, "seconds": value, "notes": "n"}
    response = annotating["client"].post(reverse(route, args=[assignment.pk]), data)
    assert response.status_code == 400, response.content[:500]
    assert Annotation.objects.count() == 0


def test_a_label_value_past_a_postgresql_integer_is_a_form_error_on_its_facet(
    annotating: dict[str, Any],
) -> None:
    built, assignment = annotating["world"], annotating["assignment"]
    facet = built.version.facets.order_by("order").first()
    data = {f"facet-{facet.pk}": str(2**31), "seconds": str(2**31)}
    url = reverse("studies:submit", args=[assignment.pk])
    response = annotating["client"].post(url, data)
    assert response.status_code == 400
    assert response.context["errors"], response.content[:500]
    assert Annotation.objects.filter(status=Annotation.Status.SUBMITTED).count() == 0


def test_a_sample_size_past_a_postgresql_integer_is_a_form_error(owner_client: Any) -> None:
    client, built = owner_client
    url, before = reverse("studies:select", args=[built.study.pk]), Selection.objects.count()
    response = client.post(url, {"round": "new-main", "sample_size": str(2**31), "seed": "1"})
    assert response.status_code == 400
    assert "sample_size" in response.context["form"].errors
    assert f"less than or equal to {INT_MAX}" in str(response.context["form"].errors)
    assert Selection.objects.count() == before


def test_a_sample_size_past_a_postgresql_integer_is_a_400_in_the_api(owner_client: Any) -> None:
    client, built = owner_client
    url, before = reverse("api-selection-create", args=[built.study.pk]), Selection.objects.count()
    body = {"round": built.round.pk, "sample_size": 2**31, "seed": 2**64}
    response = client.post(url, json.dumps(body), content_type="application/json")
    assert response.status_code == 400
    assert set(response.json()) >= {"sample_size", "seed"}
    assert Selection.objects.count() == before


def test_an_agreement_run_for_round_abc_is_a_400_naming_round(owner_client: Any) -> None:
    client, built = owner_client
    response = client.post(reverse("agreement:start", args=[built.study.pk]), {"round": "abc"})
    assert response.status_code == 400
    assert "parameter &#x27;round&#x27;: &#x27;abc&#x27; is not a whole number" in (
        response.content.decode()
    )
    assert AgreementRun.objects.count() == 0


@pytest.mark.parametrize("route", BY_KIND["codebook"], ids=lambda r: r.name)
@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_a_nul_escape_in_a_codebook_file_is_refused_naming_the_field(
    world: Any, route: Route, suffix: str
) -> None:
    document = test_uploads.OTHER_CODEBOOK | {}
    document["codebook"] = {**document["codebook"], "name": "Other\x00bugs"}
    content = json.dumps(document).encode()  # "\u0000", as JSON writes it; YAML reads it too
    before = state(world)
    response = send(world, route, f"codebook.{suffix}", content)
    assert response.status_code == 400, response.content[:500]
    body = response.json() if route.api else response.context["form"].errors
    assert "NUL" in json.dumps(body) and "name" in json.dumps(body)
    assert state(world) == before
    assert not Codebook.objects.filter(name__startswith="Other").exists()
