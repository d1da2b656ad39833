"""Seeded, stratified random sampling of issues. Pure: imports no Django.

Proportional allocation with the largest-remainder (Hamilton) method: stratum h of N_h units gets
floor(n·N_h/N) units, and the units left over go to the strata with the largest fractional
parts (ties: the larger stratum, then the name). Within a stratum, `random.Random(seed)` draws
without replacement from the units sorted by id, so the same seed, filters and data give the
same sample on any machine (Python's Mersenne Twister and `sample` are stable across versions).
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    ids: list[int]  # chosen unit ids, sorted
    strata: dict[str, dict[str, int]]  # stratum → {"matched": N_h, "sampled": n_h}


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of `n` units over strata of the given sizes (largest remainder)."""
    total = sum(sizes.values())
    if n >= total:
        return dict(sizes)
    quotas = {name: n * size / total for name, size in sizes.items()}
    shares = {name: math.floor(q) for name, q in quotas.items()}
    left = n - sum(shares.values())
    by_remainder = sorted(
        sizes, key=lambda name: (-(quotas[name] - shares[name]), -sizes[name], name)
    )
    for name in by_remainder[:left]:
        shares[name] += 1
    return shares


def stratified_sample(units: Sequence[tuple[int, Hashable]], n: int, seed: int) -> Sample:
    """Choose `n` of `units` (id, stratum) at random, proportionally to each stratum's size."""
    groups: dict[str, list[int]] = {}
    for unit_id, stratum in units:
        groups.setdefault(str(stratum), []).append(unit_id)
    shares = allocate({name: len(ids) for name, ids in groups.items()}, n)
    rng = random.Random(seed)
    chosen: list[int] = []
    strata = {}
    for name in sorted(groups):
        ids = sorted(groups[name])
        picked = rng.sample(ids, shares[name])
        chosen.extend(picked)
        strata[name] = {"matched": len(ids), "sampled": len(picked)}
    return Sample(ids=sorted(chosen), strata=strata)


def simple_sample(ids: Sequence[int], n: int, seed: int) -> list[int]:
    """`n` of `ids` at random without strata (all of them when n ≥ len(ids))."""
    ordered = sorted(ids)
    return sorted(random.Random(seed).sample(ordered, min(n, len(ordered))))


def shuffled(ids: Sequence[int], seed: int) -> list[int]:
    """`ids` in a seeded random order: the order annotators meet the items in."""
    ordered = sorted(ids)
    random.Random(seed).shuffle(ordered)
    return ordered


def share_size(n: int, percent: int) -> int:
    """How many of `n` units a share of `percent` % takes: ⌈n·percent/100⌉ (at least the share;
    every unit at 100 %)."""
    return min(n, -(-n * percent // 100))
