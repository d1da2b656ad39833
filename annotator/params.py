"""Whole numbers read from a request: int() only on ASCII digits of a sane length.

`str.isdigit()` is true for "²" and for 5,000 digits, and int() raises ValueError on both (the
first is no decimal digit, the second is past Python's 4,300-digit limit); a number past 2**31-1
passes int() and then overflows a PostgreSQL integer column. Views parse request input with
`parse_int` (a 400 naming the parameter, answered by annotator.middleware.BadInputMiddleware)
or, where a bad value must become a form error instead, with `int_or`.
"""

from __future__ import annotations

from django.core.exceptions import BadRequest

# The largest value of a PostgreSQL integer column (ids, counts, numbers of this app).
INT_MAX = 2**31 - 1
BIGINT_MAX = 2**63 - 1  # and of a bigint column (a selection's seed)
MAX_DIGITS = len(str(INT_MAX))


class BadParameter(BadRequest):
    """A request parameter that is not what the view needs; the message names it."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"parameter {name!r}: {message}")
        self.parameter = name


def int_or(value: object, default: int) -> int:
    """`value` as a number from 0 to INT_MAX if it is one, written in ASCII digits; else
    `default`."""
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or len(text.lstrip("0")) > MAX_DIGITS:
        return default
    number = int(text)
    return number if number <= INT_MAX else default


def parse_int(value: object, *, name: str, minimum: int = 0, maximum: int = INT_MAX) -> int:
    """`value` as a whole number from `minimum` to `maximum`; BadParameter naming `name`."""
    text = str(value).strip()
    digits = text.removeprefix("-") if minimum < 0 else text
    if not (digits.isascii() and digits.isdigit()) or len(digits.lstrip("0")) > MAX_DIGITS:
        raise BadParameter(name, f"{_shown(value)} is not a whole number")
    number = int(text)
    if not minimum <= number <= maximum:
        raise BadParameter(name, f"{number} is not between {minimum} and {maximum}")
    return number


def optional_int(
    value: object, *, name: str, minimum: int = 0, maximum: int = INT_MAX
) -> int | None:
    """As parse_int, with None for a missing or empty value."""
    if value is None or str(value).strip() == "":
        return None
    return parse_int(value, name=name, minimum=minimum, maximum=maximum)


def _shown(value: object) -> str:
    text = repr(str(value))
    return text if len(text) <= 40 else text[:37] + "…'"
