class TokenError(ValueError):
    """Bad input for a token; the message names the field, as `field 'days': …`."""
