"""Errors the study services raise; views and the API show their message to the user."""


class StudyError(Exception):
    """An operation the study's rules refuse; the message says why."""


class LabelErrors(StudyError):
    """Labels that do not pass validation: facet key → message, shown beside each facet."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{key}: {message}" for key, message in errors.items()))


class UnsureError(StudyError):
    """An "unsure" mark on a facet the annotation's codebook version does not have."""
