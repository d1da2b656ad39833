"""Errors the codebook services raise; views and the API show their message to the user."""


class CodebookError(Exception):
    """An operation the codebook's rules refuse; the message says why and what to do instead."""


class PublishedVersionError(CodebookError):
    """A change was attempted on a published version, which never changes."""
