from __future__ import annotations

import pytest

from tests.adjudication.helpers import Scene, make_scene


@pytest.fixture
def scene(db) -> Scene:  # type: ignore[no-untyped-def]
    """A k = 2 study of 4 issues, two annotators and an adjudicator, nothing labeled yet."""
    return make_scene()
