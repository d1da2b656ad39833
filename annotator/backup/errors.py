"""Why a backup or restore was refused. Every message names the member (table), the line and
the field where it can, and a refused restore has written nothing."""

from __future__ import annotations

from .archive import ArchiveError


class RestoreError(ValueError):
    """An archive that is intact but cannot be restored here as it is."""


# What a command or page reports to the person and treats as "refused, nothing written".
REFUSALS = (ArchiveError, RestoreError)
