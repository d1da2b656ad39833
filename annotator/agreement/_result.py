# ruff: noqa: RUF003 -- formulas are written in their own notation (α, κ, −, ×).
"""The result every coefficient returns, and its JSON form (pure; no Django)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

POPULATION_RULE = (
    "units with at least 2 ratings (pairable units); units with fewer are left out of every "
    "term, including the category marginals"
)


@dataclass(frozen=True)
class Bootstrap:
    """A seeded bootstrap over units (not over pairs)."""

    replicates: int
    seed: int | None
    se: float | None
    ci: tuple[float, float] | None
    p_below: dict[str, float]
    undefined_replicates: int


@dataclass(frozen=True)
class AgreementResult:
    """One coefficient on one table, with the design facts it used.

    `value` is None when the coefficient is undefined; `undefined_reason` says why and
    `p_o` still reports the observed agreement. `se`/`ci` are the delete-one-unit jackknife;
    `analytic_se`/`analytic_ci` are Gwet's (2008, 2014) linearisation where it exists.
    """

    coefficient: str
    value: float | None
    se: float | None
    ci: tuple[float, float] | None
    p_o: float | None
    p_e: float | None
    n_units: int
    n_pairable_units: int
    n_units_left_out: int
    n_raters: int
    n_pairable_ratings: int
    q: int
    categories_declared: bool
    observed_categories: int
    level: str | None = None
    distance: str | None = None
    weights: str | None = None
    d_o: float | None = None
    d_e: float | None = None
    analytic_se: float | None = None
    analytic_ci: tuple[float, float] | None = None
    se_method: str = "jackknife: delete-one-unit over pairable units, normal 95% interval"
    se_note: str | None = None
    confidence: float = 0.95
    population: str = POPULATION_RULE
    undefined_reason: str | None = None
    bootstrap: Bootstrap | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (tuples become lists, non-finite floats None)."""
        return _jsonable(asdict(self))  # type: ignore[no-any-return]


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, set | frozenset):
        return sorted((_jsonable(v) for v in obj), key=repr)
    if hasattr(obj, "item"):  # numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
