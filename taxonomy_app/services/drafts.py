"""The check every write to a codebook version makes first."""

from __future__ import annotations

from ..errors import PublishedVersionError
from ..models import CodebookVersion


def require_draft(version: CodebookVersion) -> None:
    """Refuse any change to a published version: agreement numbers are computed against it."""
    if version.is_published:
        raise PublishedVersionError(
            f"{version.codebook} v{version.number} is published and cannot change; "
            "start a draft to edit it"
        )
