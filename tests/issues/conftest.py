from __future__ import annotations

from typing import Any

import pytest

from annotator.issues.access import grant_import


@pytest.fixture
def user(user: Any) -> Any:
    """The signed-in user of these tests imports and syncs issues: an importer (the root
    conftest's user, in the Importers group). tests/issues/test_import_permission.py tests
    everyone else."""
    grant_import(user)
    return user
