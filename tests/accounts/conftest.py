from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotator.accounts.services import create_api_token
from tests.factories import UserFactory


@pytest.fixture
def alice(db):  # type: ignore[no-untyped-def]
    return UserFactory(username="alice")


@pytest.fixture
def bob(db):  # type: ignore[no-untyped-def]
    return UserFactory(username="bob")


def token_client(secret: str, keyword: str = "Token") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{keyword} {secret}")
    return client


@pytest.fixture
def alice_secret(alice) -> str:  # type: ignore[no-untyped-def]
    return create_api_token(user=alice, name="notebook")[1]
