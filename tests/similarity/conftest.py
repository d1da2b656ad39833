from __future__ import annotations

import pytest

from tests.studies.factories import World, make_world


@pytest.fixture
def world(db) -> World:  # type: ignore[no-untyped-def]
    """A k = 2 study of 4 issues with two annotators, on the small published codebook."""
    return make_world()
