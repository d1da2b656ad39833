"""Schemathesis against the whole API (every app's routes in /api/schema/), through the WSGI
app with an owner's token: no request that the schema allows gets a 5xx. Ten examples per
operation (~600 requests, mostly 404s on random ids) keep it around 20 s."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from annotator.accounts.models import ApiToken
from annotator.accounts.services import create_api_token
from tests.exports.factories import exported_world


@pytest.fixture
def owner_token(db):  # type: ignore[no-untyped-def]
    world = exported_world()
    return create_api_token(user=world.owner, name="schemathesis")[1]


@pytest.fixture
def api_schema(owner_token):  # type: ignore[no-untyped-def]
    # As django.test.Client does: the WSGI handler would close the test's connection (and its
    # transaction) at the end of each request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield schemathesis.openapi.from_wsgi(
        "/api/schema/?format=json",
        get_wsgi_application(),
        headers={"Authorization": f"Token {owner_token}"},
    )
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_no_server_errors(api_schema, owner_token) -> None:  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Token {owner_token}"}
    failures = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) > 40  # every app's API is in the schema
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=10,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case) -> None:  # type: ignore[no-untyped-def]
            # DELETE /api/tokens/{id}/ may revoke the very token of this run: un-revoke it, so
            # every later operation is still called as the owner.
            ApiToken.objects.update(revoked_at=None)
            case.call_and_validate(headers=headers, checks=[not_a_server_error])

        try:
            check()
        except Exception as error:
            failures.append(f"{operation.label}: {str(error)[:600]}")
    assert not failures, "\n\n".join(failures)
