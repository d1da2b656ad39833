"""Fixtures for the codebook tests: a published small codebook, its owner, a label store."""

from __future__ import annotations

import pytest

from tests.factories import UserFactory
from tests.taxonomy_app import labels as label_store
from tests.taxonomy_app.factories import published_small


@pytest.fixture
def owner(db):  # type: ignore[no-untyped-def]
    return UserFactory(username="owner")


@pytest.fixture
def owner_client(client, owner):  # type: ignore[no-untyped-def]
    client.force_login(owner)
    return client


@pytest.fixture
def v1(owner):  # type: ignore[no-untyped-def]
    """The small codebook, published as v1 and owned by `owner`."""
    return published_small(user=owner)


@pytest.fixture
def labels(settings):  # type: ignore[no-untyped-def]
    """An in-memory label store (label id → category id) behind TAXONOMY_LABEL_USAGE."""
    settings.TAXONOMY_LABEL_USAGE = "tests.taxonomy_app.labels.MemoryLabelUsage"
    label_store.LABELS.clear()
    yield label_store.LABELS
    label_store.LABELS.clear()
