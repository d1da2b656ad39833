"""Errors the adjudication services raise; views and the API show their message."""


class AdjudicationError(Exception):
    """An operation the adjudication rules refuse; the message says why."""


class DecisionConflict(AdjudicationError):
    """Someone saved the item's decision after the caller loaded it (optimistic locking): the
    first write is kept and the caller must reload before deciding again."""


class LabelErrors(AdjudicationError):
    """Final labels that do not fit the codebook: facet key → message, shown beside each facet."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{key}: {message}" for key, message in errors.items()))
