class TokenError(ValueError):
    """Bad input for a token; the message names the field, as `field 'days': …`."""


class GitHubTokenError(ValueError):
    """A GitHub token that cannot be stored; the message names the field, as for TokenError."""
